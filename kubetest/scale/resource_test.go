package scale

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// The harness's custom resource is the spec's Memcached in a group of its
// own; each run of a phase has a namespace of its own.
const (
	group        = "scale.loam.dev"
	fieldManager = "scale-controller"
	readyType    = "Ready"
)

type (
	memcachedSpec   = memcached.Spec
	memcachedStatus = memcached.Status
)

var resource = memcached.Resource(group)

// objectName names the i-th object of a run, and its ConfigMap.
func objectName(i int) string { return fmt.Sprintf("m%05d", i) }

// newObject is the i-th object as the loader creates it.
func newObject(ns string, i int) *unstructured.Unstructured {
	u := memcached.New(resource, ns, objectName(i), int32(1+i%3))
	u.SetLabels(map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": objectName(i)})
	return u
}

// owner is what a ConfigMap's owner reference and a status apply name.
type owner struct {
	name, namespace string
	uid             types.UID
	generation      int64
	spec            memcachedSpec
}

// configMap is the child a reconcile applies: a ConfigMap the object
// controls, holding its spec. The limit applies the same.
func configMap(o owner) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(o.name, o.namespace).
		WithLabels(map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": o.name}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(resource.Group + "/" + resource.Version).WithKind(resource.Kind).
			WithName(o.name).WithUID(o.uid).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithData(map[string]string{
			"size":  strconv.Itoa(int(o.spec.Size)),
			"image": o.spec.Image,
		})
}

// readyStatus is the status a reconcile returns, starting from the
// object's own: Ready, observing its generation.
func readyStatus(st memcachedStatus, o owner) memcachedStatus {
	st.ReadyReplicas = o.spec.Size
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: readyType, Status: metav1.ConditionTrue, Reason: "Reconciled",
		Message: "the ConfigMap is applied", ObservedGeneration: o.generation,
	})
	return st
}

// settled reports whether u's status observes its generation: the
// harness's definition of a converged object.
func settled(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != readyType {
			continue
		}
		g, _ := m["observedGeneration"].(int64)
		return m["status"] == string(metav1.ConditionTrue) && g == u.GetGeneration()
	}
	return false
}

// tally counts the reconciles of one replica, by object.
type tally struct {
	mu     sync.Mutex
	byName map[string]int
	total  int
	first  time.Time
	last   time.Time
	// starts is each reconcile's start, unless counting says to keep
	// none: the soak's tally must not grow with the reconciles.
	starts   []time.Time
	counting bool
	// applying is the time the reconciles spent in their ConfigMap apply.
	applying time.Duration
}

func newTally() *tally { return &tally{byName: map[string]int{}} }

// newCountingTally returns a tally that keeps no reconcile's start, so
// before always returns 0 and its memory grows only with the objects.
func newCountingTally() *tally { return &tally{byName: map[string]int{}, counting: true} }

func (t *tally) add(name string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total == 0 {
		t.first = now
	}
	t.total++
	t.last = now
	t.byName[name]++
	if !t.counting {
		t.starts = append(t.starts, now)
	}
}

// applied adds the time of one ConfigMap apply.
func (t *tally) applied(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.applying += d
}

// before returns how many reconciles began before at.
func (t *tally) before(at time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, _ := slices.BinarySearchFunc(t.starts, at, func(s, at time.Time) int { return s.Compare(at) })
	return n
}

// applyTime returns the time the reconciles spent in their ConfigMap
// apply.
func (t *tally) applyTime() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applying
}

// snapshot returns the total, how many objects were reconciled, and the
// times of the first and the latest reconcile.
func (t *tally) snapshot() (total, objects int, first, last time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total, len(t.byName), t.first, t.last
}

// histogram returns how many objects were reconciled k times, for each k.
func (t *tally) histogram() map[int]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := map[int]int{}
	for _, k := range t.byName {
		h[k]++
	}
	return h
}

// reconciler is the harness's Reconciler: one child apply and one status,
// the reconcile the limit is the yardstick of. When gate is not nil, each
// reconcile waits for it to close after it is counted.
type reconciler struct {
	kube  kubernetes.Interface
	tally *tally
	gate  <-chan struct{}
}

func (r reconciler) Reconcile(ctx context.Context, m memcached.Object) (kube.Result[memcachedStatus], error) {
	r.tally.add(m.Name)
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return kube.Result[memcachedStatus]{}, ctx.Err()
		}
	}
	o := owner{name: m.Name, namespace: m.Namespace, uid: m.UID, generation: m.Generation, spec: m.Spec}
	start := time.Now()
	_, err := r.kube.CoreV1().ConfigMaps(m.Namespace).Apply(ctx, configMap(o), metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	r.tally.applied(time.Since(start))
	if err != nil {
		st := m.Status
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: readyType, Status: metav1.ConditionFalse, Reason: "ApplyFailed",
			Message: err.Error(), ObservedGeneration: m.Generation,
		})
		return kube.Result[memcachedStatus]{Status: &st}, err
	}
	st := readyStatus(m.Status, o)
	return kube.Result[memcachedStatus]{Status: &st}, nil
}

// configMaps is what the controller owns.
var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")
