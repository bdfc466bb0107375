package memcached

import (
	"context"
	"regexp"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kube"
)

// MemcachedSpec is what a Memcached declares: how many memcached pods run,
// and their image.
type MemcachedSpec struct {
	Size  int32  `json:"size"`
	Image string `json:"image"`
}

// MemcachedStatus is what the controller reports: how many of the pods are
// ready, and whether the Memcached is available.
type MemcachedStatus struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

// Object is one Memcached, as the controller hands it to the Reconciler.
type Object = kube.Object[MemcachedSpec, MemcachedStatus]

// spec and status are what Memcached's Rules point into: Rules reads
// nothing from them, and only finds which field each pointer names.
var (
	spec   MemcachedSpec
	status MemcachedStatus
)

// Memcached is the Memcached custom resource, cache.example.com/v1alpha1.
// Its CRD is reflected from MemcachedSpec and MemcachedStatus, and checked
// in as deploy/crd.yaml, which TestMemcachedCRD keeps true to the types.
var Memcached = kube.Resource[MemcachedSpec, MemcachedStatus]{
	Group:   "cache.example.com",
	Version: "v1alpha1",
	Kind:    "Memcached",
	Plural:  "memcacheds",
	Scope:   kube.Namespaced,
	Rules: []kube.TypeRules{
		kube.Rules(&spec,
			kube.Field(&spec.Size).Minimum(1).Maximum(3).Description("How many memcached pods run."),
			kube.Field(&spec.Image).Pattern(regexp.MustCompile(`^memcached:`)).Default("memcached:1.6.26-alpine3.19"),
		),
		kube.Rules(&status,
			kube.Field(&status.Conditions).ListMap("type"),
		),
	},
}

// Reconciler is the Memcached operator's Reconciler: it applies a
// Deployment that the Memcached controls, and reports the Deployment's
// ready replicas, and whether it is available.
type Reconciler struct{ Kube kubernetes.Interface }

// Reconcile applies m's Deployment and returns m's status. A failed apply
// is both an Available condition of Unknown with the reason ApplyFailed,
// which the controller applies, and the error, which retries m.
func (r Reconciler) Reconcile(ctx context.Context, m Object) (kube.Result[MemcachedStatus], error) {
	labels := map[string]string{"app": "memcached", "memcached": m.Name}
	d, err := r.Kube.AppsV1().Deployments(m.Namespace).Apply(ctx,
		appsv1ac.Deployment(m.Name, m.Namespace).
			WithOwnerReferences(metav1ac.OwnerReference().
				WithAPIVersion(m.APIVersion).WithKind(m.Kind).WithName(m.Name).WithUID(m.UID).
				WithController(true).WithBlockOwnerDeletion(true)).
			WithSpec(appsv1ac.DeploymentSpec().
				WithReplicas(m.Spec.Size).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
				WithTemplate(corev1ac.PodTemplateSpec().
					WithLabels(labels).
					WithSpec(corev1ac.PodSpec().WithContainers(
						corev1ac.Container().WithName("memcached").WithImage(m.Spec.Image))))),
		metav1.ApplyOptions{FieldManager: "memcached-controller", Force: true},
	)
	st := m.Status
	if err != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: "Available", Status: metav1.ConditionUnknown, Reason: "ApplyFailed",
			Message: err.Error(), ObservedGeneration: m.Generation,
		})
		return kube.Result[MemcachedStatus]{Status: &st}, err
	}
	st.ReadyReplicas = d.Status.ReadyReplicas
	meta.SetStatusCondition(&st.Conditions, available(d, m.Generation))
	return kube.Result[MemcachedStatus]{Status: &st}, nil
}

// available is the Memcached's Available condition: the Deployment's own,
// copied, so a Deployment whose pods don't become available says why in
// the Memcached's status. Until the Deployment controller has written it,
// it is Unknown.
func available(d *appsv1.Deployment, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type: "Available", Status: metav1.ConditionUnknown, Reason: "DeploymentPending",
		ObservedGeneration: generation,
	}
	for _, dc := range d.Status.Conditions {
		if dc.Type != appsv1.DeploymentAvailable {
			continue
		}
		c.Status, c.Message = metav1.ConditionStatus(dc.Status), dc.Message
		if dc.Reason != "" {
			c.Reason = dc.Reason // the API server requires a reason
		}
	}
	return c
}
