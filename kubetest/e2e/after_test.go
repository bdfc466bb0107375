package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// afterReconciler reports each Memcached ready at its size and asks to be
// reconciled again in After, recording when each reconcile started.
type afterReconciler struct {
	after time.Duration

	mu    sync.Mutex
	times []time.Time
}

func (r *afterReconciler) Reconcile(_ context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
	r.mu.Lock()
	r.times = append(r.times, time.Now())
	r.mu.Unlock()
	return kube.Result[memcachedStatus]{Status: &memcachedStatus{ReadyReplicas: m.Spec.Size}, After: r.after}, nil
}

func (r *afterReconciler) started() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.times)
}

// The spec: "After … reconciles it again after that long, unless it
// changes first". A Reconciler returns After: 6s; its object changes 2s
// after its last reconcile. The change reconciles it, and the next
// reconcile is 6s after that one — never 6s after the one before the
// change, which client-go's uncancellable AddAfter would still fire.
func TestController_a_change_cancels_a_pending_After(t *testing.T) {
	// Serial: its change must reconcile within 2s, a margin CPU contention eats.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "m", 1)

	rec := &afterReconciler{after: 6 * time.Second}
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("after-controller", ns, "pod-a")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, r, rec)
	})

	// The first reconcile applies the status, which reconciles it again:
	// that second pass, which changes nothing, is the last before the
	// change, and leaves a timer of 6s.
	wait.For(t, time.Minute, func() bool { return len(rec.started()) >= 2 }, "the Memcached isn't reconciled twice", a)
	last := rec.started()[1]
	time.Sleep(time.Until(last.Add(2 * time.Second)))
	require.Len(t, rec.started(), 2, "nothing reconciled the Memcached within 2s of its last reconcile")

	_, err := admin.dynamic.Resource(r.GVR()).Namespace(ns).Patch(t.Context(), "m", types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"touched":"yes"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	// The reconcile the change queues, and the one its After queues.
	wait.For(t, time.Minute, func() bool { return len(rec.started()) >= 4 }, "the change and its After don't reconcile the Memcached", a)
	times := rec.started()
	changed, next := times[2], times[3]
	require.Less(t, changed.Sub(last), 4*time.Second, "the change reconciled at once, before the old timer's 6s")
	require.GreaterOrEqual(t, next.Sub(changed), 6*time.Second,
		"the reconcile after the change's is its own After's, 6s later: the old timer, due %v after the change's reconcile, was dropped",
		last.Add(6*time.Second).Sub(changed).Round(time.Millisecond))
}
