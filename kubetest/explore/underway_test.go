package explore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/explore"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// slowWorker is a correct operator that works outside the cluster, as
// the databases example's does in PostgreSQL: a reconcile with work to
// do reports the Memcached's generation observed, then works for work,
// writing nothing, then applies the Deployment. Its object is settled,
// and the operator writes nothing, for longer than Quiet while the work
// is under way: an explorer that took that silence for quiet would check
// the invariant before the Deployment came.
type slowWorker struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	work    time.Duration
}

func (o slowWorker) Reconcile(ctx context.Context, m memcached.Object) (kube.Result[memcached.Status], error) {
	st := m.Status
	d, err := o.kube.AppsV1().Deployments(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || err == nil && !follows(d, m):
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: "Ready", Status: metav1.ConditionFalse, Reason: "Working", ObservedGeneration: m.Generation,
		})
		patch, err := json.Marshal(map[string]any{"status": st})
		if err != nil {
			return kube.Result[memcached.Status]{}, err
		}
		if _, err := o.dynamic.Resource(resource.GVR()).Namespace(m.Namespace).Patch(ctx, m.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return kube.Result[memcached.Status]{}, err
		}
		// The work itself: the operator's time, not the test's.
		select {
		case <-ctx.Done():
			return kube.Result[memcached.Status]{}, context.Cause(ctx)
		case <-time.After(o.work):
		}
		if _, err := o.kube.AppsV1().Deployments(m.Namespace).Apply(ctx, memcached.Deployment(m),
			metav1.ApplyOptions{FieldManager: "explore-test", Force: true}); err != nil {
			return kube.Result[memcached.Status]{}, err
		}
	case err != nil:
		return kube.Result[memcached.Status]{}, err
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: m.Generation,
	})
	return kube.Result[memcached.Status]{Status: &st}, nil
}

// reconcileUnderWay explores slowWorker, whose work outlasts Quiet three times
// over, through a create with no fault: the explorer must wait for the
// reconcile under way, not check the invariant in its silence.
func reconcileUnderWay(t *testing.T, c *kubetest.Cluster) {
	f, err := explore.Find(t, c, underWayConfig(t, 900*time.Millisecond))
	require.NoError(t, err)
	if f != nil {
		t.Fatalf("the explorer checked while a reconcile was under way: %v", f)
	}
}

// underWayConfig explores slowWorker, each reconcile with work to do
// working for work, through sequence 0 of seed 1, of one step, which
// creates explore-0 (quickseeds_test.go): no fault, no fresh create, the
// work's silence alone. Quiet is 300 ms.
func underWayConfig(t *testing.T, work time.Duration) explore.Config[memcached.Spec, memcached.Status] {
	cfg := config(correct, 1)
	cfg.Build = func(s *app.Setup, client *kube.Client, ns string) ([]app.Service, error) {
		k, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		d, err := dynamic.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		// A replica stopped waits for its reconciles in flight for
		// DrainTimeout, 15 s by default, before it cancels them: the
		// shortest, RetryPeriod, for the work that never ends.
		settings := explore.Settings("explore-slow", ns)
		settings.LeaderElection.DrainTimeout = settings.LeaderElection.RetryPeriod
		ctrl, err := kube.NewController(s, client, settings, resource, slowWorker{kube: k, dynamic: d, work: work})
		if err != nil {
			return nil, err
		}
		return []app.Service{ctrl}, nil
	}
	cfg.Sequences, cfg.Steps, cfg.Quiet = 1, 1, 300*time.Millisecond
	cfg.Faults = explore.Faults{NoCrashes: true, NoStaleViews: true}
	cfg.NoFreshCreates, cfg.NoUnfaultedReplays = true, true
	cfg.Corpus = t.TempDir()
	return cfg
}

// atSettle runs, as subtests of t, the explorations that fail at
// Settle: a reconcile that never ends, and a loop always under way.
func atSettle(t *testing.T, c *kubetest.Cluster) {
	t.Run("a reconcile that never ends fails at Settle, named", func(t *testing.T) {
		t.Parallel()
		reconcileNeverEnds(t, c)
	})
	t.Run("a loop always under way is named a loop at Settle", func(t *testing.T) {
		t.Parallel()
		loopAlwaysUnderWay(t, c)
	})
}

// reconcileNeverEnds explores slowWorker whose work never ends within
// Settle: the explorer mustn't wait for it past Settle, and its failure
// says what the operator is still at.
func reconcileNeverEnds(t *testing.T, c *kubetest.Cluster) {
	cfg := underWayConfig(t, time.Hour)
	cfg.Settle = 2 * time.Second
	f, err := explore.Find(t, c, cfg)
	require.NoError(t, err)
	require.NotNil(t, f, "a reconcile that never ends is no quiet")
	t.Logf("%v", f)
	require.ErrorContains(t, f.Err, "not settled within")
	require.ErrorContains(t, f.Err, "the operator is still reconciling Memcached ")
}

// busyLooper is an operator that reconciles in a loop with nothing to
// do, as the planted loops does, but whose every reconcile works outside
// the cluster for busy and asks for the next at once: one of its
// reconciles is nearly always under way, so the operator is hardly ever
// seen quiet, and the settle wait runs out before the liveness oracle
// looks, as the planted loop's did on a loaded machine.
type busyLooper struct {
	kube kubernetes.Interface
	busy time.Duration
}

func (o busyLooper) Reconcile(ctx context.Context, m memcached.Object) (kube.Result[memcached.Status], error) {
	d, err := o.kube.AppsV1().Deployments(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && !follows(d, m) {
		if _, err := o.kube.AppsV1().Deployments(m.Namespace).Apply(ctx, memcached.Deployment(m),
			metav1.ApplyOptions{FieldManager: "explore-test", Force: true}); err != nil {
			return kube.Result[memcached.Status]{}, err
		}
	} else if err != nil {
		return kube.Result[memcached.Status]{}, err
	}
	select {
	case <-ctx.Done():
		return kube.Result[memcached.Status]{}, context.Cause(ctx)
	case <-time.After(o.busy):
	}
	st := m.Status
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: "Ready", Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: m.Generation,
	})
	return kube.Result[memcached.Status]{Status: &st, After: time.Nanosecond}, nil
}

// loopAlwaysUnderWay explores busyLooper: a loop the settle wait sees
// only as a reconcile under way at Settle is named a loop, not a
// reconcile still at work.
func loopAlwaysUnderWay(t *testing.T, c *kubetest.Cluster) {
	cfg := underWayConfig(t, 0)
	cfg.Build = func(s *app.Setup, client *kube.Client, ns string) ([]app.Service, error) {
		k, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		ctrl, err := kube.NewController(s, client, explore.Settings("explore-busy", ns), resource, busyLooper{kube: k, busy: 40 * time.Millisecond})
		if err != nil {
			return nil, err
		}
		return []app.Service{ctrl}, nil
	}
	cfg.Settle = 2 * time.Second
	f, err := explore.Find(t, c, cfg)
	require.NoError(t, err)
	require.NotNil(t, f, "a loop is no quiet")
	t.Logf("%v", f)
	require.ErrorContains(t, f.Err, "the operator reconciles in a loop: with nothing to do, writing nothing, Memcached ")
}
