package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	loamtelemetry "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// panicLabel says which of the end user's functions panics for an
// object: reconcile, finalize or trust.
const panicLabel = "chaos.example.com/panics-in"

// counter counts calls by object name.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

func (c *counter) of(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// touch changes the object's labels, which reconciles it, and returns the
// revision of the change: a reconcile that reads the object at that
// revision or later comes after every reconcile of its earlier writes.
func touch(t *testing.T, ri dynamic.ResourceInterface, name, value string) int64 {
	t.Helper()
	u, err := ri.Patch(t.Context(), name, types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"labels":{"touched":%q}}}`, value), metav1.PatchOptions{})
	require.NoError(t, err)
	return revisionOf(u.GetResourceVersion())
}

// revisionOf reads a resourceVersion as the etcd revision it is, 0 when it
// isn't one. The API says resourceVersions are opaque; kubetest's API
// server stores in etcd, where every write takes the next revision, so
// ordering them orders the writes.
func revisionOf(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

// panicsOf returns how many reconcile panicked records name the object.
func panicsOf(a *controllerApp, name string) int {
	n := 0
	for _, r := range a.Telemetry().Records() {
		if r.Body().AsString() != "reconcile panicked" {
			continue
		}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			if kv.Key == loamtelemetry.ObjectNameKey && kv.Value.AsString() == name {
				n++
			}
			return true
		})
	}
	return n
}

// retriesAllowed is how many retries a backoff of p allows in window
// after a first failure: the delays double from BaseDelay to MaxDelay.
func retriesAllowed(p backoff.Policy, window time.Duration) int {
	n := 0
	for elapsed := p.Exponential(0); elapsed <= window; elapsed += p.Exponential(n) {
		n++
	}
	return n
}

func TestChaos_panics_in_a_Reconciler_a_Finalize_and_a_trust_func_are_not_retried_and_the_rest_goes_on(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	window := chaosSize(3*time.Second, 20*time.Second)
	calm := chaosSize(5, 50)

	var (
		reconciles, finalizes counter
		fixed                 atomic.Bool
		settings              kube.Settings
	)
	a := startChaosController(t, throughWire(t, c), app.Host{Network: &chaosNetwork{}}, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings = settingsFor("panic-controller", ns, "pod-0")
		settings.Namespace = ns
		settings.Workers = 2
		return kube.NewController(s, client, settings, r,
			kube.ReconcilerFunc[memcachedSpec, memcachedStatus](func(_ context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
				reconciles.add(m.Name)
				if m.Labels[panicLabel] == "reconcile" {
					var replicas map[string]int32
					replicas[m.Name] = m.Spec.Size //nolint:staticcheck // SA5000 is the point: a write to a nil map, the mistake the spec means
				}
				st := m.Status
				st.ReadyReplicas = m.Spec.Size
				return kube.Result[memcachedStatus]{Status: &st}, nil
			}),
			kube.Finalize(chaosFinalizer, func(_ context.Context, m memcachedObject) error {
				finalizes.add(m.Name)
				if m.Labels[panicLabel] == "finalize" && !fixed.Load() {
					panic("the backups of " + m.Name + " are in an unknown state")
				}
				return nil
			}),
			kube.TrustScenario(scenarioAnnotation, func(obj metav1.Object) bool {
				if obj.GetLabels()[panicLabel] == "trust" {
					panic("trust: an index out of range, say")
				}
				return obj.GetNamespace() == ns
			}))
	}, app.WithFaults(fault.Settings{Decoder: codec}))

	// A scenario that touches nothing the controller does: it only makes
	// the controller ask trust about the object.
	scenario := map[string]string{scenarioAnnotation: annotationValue(t, codec, fit.Rule{Point: "kube:configmaps:get", Fault: fit.Fault{Abort: true}})}
	createWith(t, memcacheds, r, ns, "reconcile-panics", map[string]string{panicLabel: "reconcile"}, nil)
	createWith(t, memcacheds, r, ns, "finalize-panics", map[string]string{panicLabel: "finalize"}, nil)
	createWith(t, memcacheds, r, ns, "trust-panics", map[string]string{panicLabel: "trust"}, scenario)
	createWith(t, memcacheds, r, ns, "trusted", nil, scenario)
	for i := range calm {
		createWith(t, memcacheds, r, ns, fmt.Sprintf("calm-%02d", i), nil, nil)
	}

	ready := func(name string, size int32) bool {
		m, ok := getMemcached(t, admin.dynamic, r, ns, name)
		return ok && m.Status.ReadyReplicas == size
	}
	wait.For(t, time.Minute, func() bool { return reconciles.of("reconcile-panics") > 0 }, "the panicking object is never reconciled", a)
	wait.For(t, time.Minute, func() bool { return panicsOf(a, "trust-panics") > 0 }, "trust never panicked", a)
	wait.For(t, time.Minute, func() bool {
		for i := range calm {
			if !ready(fmt.Sprintf("calm-%02d", i), 1) {
				return false
			}
		}
		return ready("finalize-panics", 1) && ready("trusted", 1)
	}, "the other objects aren't reconciled", a)

	// A window in which the panicking objects don't change, while the
	// others do and new ones come: the panics are not retried, the rest
	// is reconciled.
	atStart := map[string]int{
		"reconcile-panics": reconciles.of("reconcile-panics"),
		"trust-panics":     panicsOf(a, "trust-panics"),
	}
	windowEnds := time.Now().Add(window)
	for i := range calm {
		_, err := memcacheds.Patch(t.Context(), fmt.Sprintf("calm-%02d", i), types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	}
	createWith(t, memcacheds, r, ns, "late", nil, nil)
	wait.For(t, time.Minute, func() bool {
		for i := range calm {
			if !ready(fmt.Sprintf("calm-%02d", i), 2) {
				return false
			}
		}
		return ready("late", 1)
	}, "changes during the panics aren't reconciled", a)
	// The rest of the window, which the figure below reports on. A retry
	// is a backoff timer's: no event comes after one that doesn't exist,
	// so what shows there is none is a window in which a backoff would
	// have retried `allowed` times.
	time.Sleep(time.Until(windowEnds))

	policy := backoff.Default()
	policy.BaseDelay, policy.MaxDelay = settings.RetryBaseDelay, settings.RetryMaxDelay
	allowed := retriesAllowed(policy, window)
	t.Logf("figure: panics: over %v, the panicking Reconciler ran %d more times and the panicking trust %d more times (a backoff of %v to %v would allow %d retries; the spec allows none)",
		window, reconciles.of("reconcile-panics")-atStart["reconcile-panics"], panicsOf(a, "trust-panics")-atStart["trust-panics"],
		policy.BaseDelay, policy.MaxDelay, allowed)
	require.Equal(t, 1, reconciles.of("reconcile-panics"), "a panicking Reconciler is never retried")
	require.Equal(t, 1, panicsOf(a, "reconcile-panics"))
	require.Equal(t, 1, panicsOf(a, "trust-panics"), "a panicking trust is never retried")
	require.Zero(t, reconciles.of("trust-panics"), "nothing runs after trust panics")
	m, _ := getMemcached(t, admin.dynamic, r, ns, "trust-panics")
	require.NotContains(t, m.Finalizers, chaosFinalizer, "nothing runs after trust panics: no finalizer")
	require.Zero(t, m.Status.ReadyReplicas, "nothing runs after trust panics: no status")
	m, _ = getMemcached(t, admin.dynamic, r, ns, "reconcile-panics")
	require.Zero(t, m.Status.ReadyReplicas, "no status after a panic")

	// A change reconciles a panicked object again, once.
	touch(t, memcacheds, "reconcile-panics", "once")
	wait.For(t, time.Minute, func() bool { return reconciles.of("reconcile-panics") == 2 }, "a change doesn't reconcile the panicked object", a)

	// A Finalize that panics: the finalizer stays, and it isn't retried.
	require.NoError(t, memcacheds.Delete(t.Context(), "finalize-panics", metav1.DeleteOptions{}))
	wait.For(t, time.Minute, func() bool { return panicsOf(a, "finalize-panics") > 0 }, "Finalize never panicked", a)
	// As above: the window in which a backoff would have retried it.
	time.Sleep(window)
	require.Equal(t, 1, finalizes.of("finalize-panics"), "a panicking Finalize is never retried")
	m, ok := getMemcached(t, admin.dynamic, r, ns, "finalize-panics")
	require.True(t, ok, "the finalizer holds the object")
	require.NotNil(t, m.DeletionTimestamp)
	require.Contains(t, m.Finalizers, chaosFinalizer)
	// The fix ships; the object's next reconcile, here a change, finalizes
	// it.
	fixed.Store(true)
	touch(t, memcacheds, "finalize-panics", "fixed")
	wait.For(t, time.Minute, func() bool { _, ok := getMemcached(t, admin.dynamic, r, ns, "finalize-panics"); return !ok }, "the fixed Finalize never ran", a)
	require.Equal(t, 2, finalizes.of("finalize-panics"))

	// Each panic is one reconcile of outcome panic.
	panics := len(a.Telemetry().ExceptionMessages("reconcile panicked"))
	require.Equal(t, 4, panics, "one Reconciler's, one trust's, one Finalize's, and the Reconciler's again after the change")
	h, err := a.Telemetry().Metric(t.Context(), loamtelemetry.ReconcileDurationName)
	require.NoError(t, err)
	var outcomePanic uint64
	for _, dp := range h.Data.(metricdata.Histogram[float64]).DataPoints {
		if v, _ := dp.Attributes.Value(loamtelemetry.OutcomeKey); v.AsString() == "panic" {
			outcomePanic += dp.Count
		}
	}
	require.Equal(t, uint64(panics), outcomePanic)
	require.Equal(t, 0, a.Stop(), "the panics never end the Service")
	require.Empty(t, a.failure())
	require.True(t, slices.ContainsFunc(a.Telemetry().ExceptionMessages("reconcile panicked"), func(msg string) bool {
		return msg == "assignment to entry in nil map"
	}), "the Reconciler's panic is recorded with its message")
}
