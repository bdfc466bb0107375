package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

// childFaults records, per Deployment, what the child controller's
// reconciles met at its own point.
type childFaults struct {
	mu  sync.Mutex
	met map[string][]fit.Fault
}

func (c *childFaults) add(name string, f fit.Fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.met == nil {
		c.met = map[string][]fit.Fault{}
	}
	c.met[name] = append(c.met[name], f)
}

func (c *childFaults) of(name string) []fit.Fault {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]fit.Fault(nil), c.met[name]...)
}

// TestFaults_TrustOwnerScenario_trusts_a_child_only_while_it_says_what_its_owner_says:
// the child controller trusts the Deployment the Memcached's reconcile
// applied, whose annotation is the owner's scenario, and its reconciles
// meet it; a Deployment written by someone else, controlled by the same
// Memcached, uid and all, but annotated with a scenario the Memcached
// doesn't carry, is trusted in nothing, and so is one the owner's own
// value is copied onto, which the owner's mapping doesn't name. When the
// owner's experiment ends, its child's ends with it.
func TestFaults_TrustOwnerScenario_trusts_a_child_only_while_it_says_what_its_owner_says(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	met := &childFaults{}
	const point = "budget:poddisruptionbudget"
	a := startExperiment(t, throughWire(t, c), codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		owner, err := memcachedUnderTest(s, client, r, ns, experimentReconciler{log: log})
		if err != nil {
			return nil, err
		}
		owners := kube.NewCache(kube.Kind[metav1.PartialObjectMetadata]{GVR: r.GVR(), Kind: r.Kind, Scope: kube.Namespaced},
			kube.CacheOptions[metav1.PartialObjectMetadata]{})
		child, err := kube.NewKindController(s, client, experimentSettings("memcached-budget", ns), Deployments,
			kube.KindReconcilerFunc[appsv1.Deployment](func(ctx context.Context, d appsv1.Deployment) (time.Duration, error) {
				met.add(d.Name, s.Faults.Eval(ctx, point))
				return 0, nil
			}),
			// A Memcached's change reconciles the Deployment of its name.
			kube.Watches(owners, kube.MapFunc(func(m metav1.Object) []kube.Key {
				return []kube.Key{{Namespace: m.GetNamespace(), Name: m.GetName()}}
			})),
			kube.TrustOwnerScenario(scenarioAnnotation, owners, inNamespace(ns)),
		)
		if err != nil {
			return nil, err
		}
		return []app.Service{owner, child}, nil
	})

	value := annotationValue(t, codec, fit.Rule{Point: point, Fault: fit.Fault{Abort: true}})
	obj := createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})
	wait.For(t, time.Minute, func() bool {
		f := met.of("cache")
		return len(f) > 0 && f[len(f)-1].Abort
	}, "the Memcached's own Deployment never carried its scenario", wait.App(a))

	// Another writer's Deployment, with the owner's reference and a
	// scenario of its own: the same rule under another ID.
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{
		ID: "not-the-owners", Rules: []fit.Rule{{Point: point, Fault: fit.Fault{Abort: true}}},
	})
	require.NoError(t, err)
	var m memcached.Object
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &m))
	rogue := memcached.Deployment(m)
	rogue.WithName("rogue").WithAnnotations(map[string]string{scenarioAnnotation: baggage.FromContext(ctx).String()})
	_, err = admin.kube.AppsV1().Deployments(ns).Apply(t.Context(), rogue, metav1.ApplyOptions{FieldManager: "someone-else", Force: true})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool { return len(met.of("rogue")) > 0 }, "the rogue Deployment is never reconciled", wait.App(a))
	for _, f := range met.of("rogue") {
		require.False(t, f.Abort, "a scenario its owner doesn't carry is trusted in nothing")
	}

	// The owner's own value copied onto another Deployment, controlled by
	// the same Memcached: the owner's mapping doesn't name it, so it is
	// trusted in nothing either.
	copied := memcached.Deployment(m)
	copied.WithName("copy").WithAnnotations(map[string]string{scenarioAnnotation: value})
	_, err = admin.kube.AppsV1().Deployments(ns).Apply(t.Context(), copied, metav1.ApplyOptions{FieldManager: "someone-else", Force: true})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool { return len(met.of("copy")) > 0 }, "the copied Deployment is never reconciled", wait.App(a))
	for _, f := range met.of("copy") {
		require.False(t, f.Abort, "the owner's value on a child it doesn't name is trusted in nothing")
	}

	// The owner's experiment ends: its child's reconciles meet nothing,
	// even before the Memcached's reconcile takes the annotation off it.
	setScenario(t, memcacheds, "cache", nil)
	wait.For(t, time.Minute, func() bool {
		f := met.of("cache")
		return !f[len(f)-1].Abort
	}, "the Deployment's reconciles still carry the ended scenario", wait.App(a))
	require.Equal(t, 0, a.Stop())
	require.Positive(t, events(a, fault.StripEvent), "the untrusted scenario was stripped from the rogue's reconciles")
}
