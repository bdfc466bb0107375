package memcached

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// FieldManager is the field manager of every apply the comparison makes,
// the limit's and both controllers'.
const FieldManager = "memcached-controller"

// ReadyType is the type of the condition that says an object is settled.
const ReadyType = "Ready"

// Owner is what a ConfigMap's owner reference names: one Memcached.
type Owner struct {
	Namespace, Name string
	UID             types.UID
}

// ConfigMap is the child one reconcile applies for the Memcached o of
// spec: a ConfigMap of o's name, which o controls, holding the size.
func ConfigMap(o Owner, spec Spec) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(o.Name, o.Namespace).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(GroupVersion.String()).WithKind(Kind).
			WithName(o.Name).WithUID(o.UID).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithData(map[string]string{"size": strconv.Itoa(int(spec.Size))})
}

// Ready returns st as a reconcile of generation leaves it: observing
// generation, with a Ready condition of True. A condition already Ready
// keeps its lastTransitionTime, so a second reconcile returns st
// unchanged. st itself is not changed.
func Ready(st Status, generation int64) Status {
	st.Conditions = slices.Clone(st.Conditions)
	st.ObservedGeneration = generation
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: ReadyType, Status: metav1.ConditionTrue, Reason: "Reconciled",
		Message: "the ConfigMap is applied", ObservedGeneration: generation,
	})
	return st
}

// Settled reports whether st says that generation has been reconciled: a
// Ready condition of True that observes it. A settled object costs no
// write in either controller, and the harness counts an object converged
// once its watch sees it settled.
func Settled(st Status, generation int64) bool {
	c := meta.FindStatusCondition(st.Conditions, ReadyType)
	return c != nil && c.Status == metav1.ConditionTrue &&
		c.ObservedGeneration == generation && st.ObservedGeneration == generation
}
