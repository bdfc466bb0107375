package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// slowReconciles records the reconciles of Reconcilers that each take a
// while, of every replica.
type slowReconciles struct {
	mu    sync.Mutex
	calls []slowCall
}

// slowCall is one slow reconcile: by whom, of what, when, and whether its
// context was cancelled before it ended.
type slowCall struct {
	replica, name string
	start, end    time.Time // end is zero while it runs
	ctxErr        error
}

// reconcile waits until gate is closed, takes d, and reconciles w,
// recording it all as identity's.
func (s *slowReconciles) reconcile(ctx context.Context, k kubernetes.Interface, identity string, gate <-chan struct{}, d time.Duration, w widget) (kube.Result[widgetStatus], error) {
	s.mu.Lock()
	i := len(s.calls)
	s.calls = append(s.calls, slowCall{replica: identity, name: w.Name, start: time.Now()})
	s.mu.Unlock()

	select {
	case <-gate:
	case <-ctx.Done():
	}
	pause(ctx, d)
	res, err := reconcileWidget(ctx, k, w)

	s.mu.Lock()
	s.calls[i].end, s.calls[i].ctxErr = time.Now(), ctx.Err()
	s.mu.Unlock()
	return res, err
}

// of returns identity's reconciles.
func (s *slowReconciles) of(identity string) []slowCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(s.calls), func(c slowCall) bool { return c.replica != identity })
}

// TestChaos_SIGTERM_mid_reconcile sends the leader of two replicas SIGTERM
// while every worker is in a slow reconcile and a backlog waits. The
// reconciles in flight finish, uncancelled, and their statuses are
// applied; no reconcile starts after the signal; the Lease is released, so
// the standby takes it at once, long before LeaseDuration; the leader
// exits 0; and the standby reconciles the backlog: every Widget reflects
// its spec, none is lost.
func TestChaos_SIGTERM_mid_reconcile(t *testing.T) {
	objects := sized(10, 20, 60)
	const workers = 2
	const reconcileTime = time.Second
	c := startCluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)
	for i := range objects {
		_, err := createWidget(t.Context(), admin.dynamic, ns, fmt.Sprintf("w%03d", i), 1)
		require.NoError(t, err)
	}

	var slow slowReconciles
	// The leader waits for the standby to sync before it gets going, so
	// it is still busy when it is told to stop.
	gate := make(chan struct{})
	// Each replica through a Proxy of its own, which times its Lease
	// requests.
	wires := map[string]*wire{}
	start := func(identity string) *replica {
		s := settingsFor(ns, identity)
		s.Workers = workers
		// A Lease so long that a standby waiting it out would fail the
		// test: only a released Lease is taken over in time.
		s.LeaderElection.LeaseDuration = time.Minute
		s.LeaderElection.RetryPeriod = 500 * time.Millisecond
		conn, seen := proxied(t, c)
		wires[identity] = seen
		return startReplica(t, conn, s, func(k kubernetes.Interface) kube.Reconciler[widgetSpec, widgetStatus] {
			return kube.ReconcilerFunc[widgetSpec, widgetStatus](func(ctx context.Context, w widget) (kube.Result[widgetStatus], error) {
				return slow.reconcile(ctx, k, identity, gate, reconcileTime, w)
			})
		})
	}
	a := start("pod-a")
	wait.For(t, time.Minute, func() bool { return holder(t, admin.kube, ns) == "pod-a" }, "pod-a never leads", a)
	b := start("pod-b")
	wait.For(t, time.Minute, func() bool { return b.synced(t) }, "pod-b never synced", a, b)
	close(gate)

	// SIGTERM once pod-a has finished a few reconciles and every worker
	// is in another.
	wait.For(t, time.Minute, func() bool {
		done, running := 0, 0
		for _, call := range slow.of("pod-a") {
			if call.end.IsZero() {
				running++
			} else {
				done++
			}
		}
		return done >= workers && running == workers
	}, "pod-a never got going", a, b)
	signalled := time.Now()
	require.Equal(t, 0, a.Stop(), "SIGTERM: a clean exit")
	exited := time.Now()
	require.Empty(t, a.failure())

	// The reconciles in flight at the signal finished, uncancelled, and
	// their statuses were applied; none began after it.
	inFlight := 0
	for _, call := range slow.of("pod-a") {
		require.True(t, call.start.Before(signalled), "%s: pod-a began a reconcile after SIGTERM", call.name)
		require.False(t, call.end.IsZero(), "%s: pod-a exited with a reconcile in flight", call.name)
		require.NoError(t, call.ctxErr, "%s: pod-a's reconcile in flight was cancelled", call.name)
		if call.end.After(signalled) {
			inFlight++
		}
	}
	require.Equal(t, workers, inFlight, "every worker was in a reconcile at the signal")
	for _, iv := range a.reconciles() {
		require.False(t, iv.failed, "%s: pod-a's reconcile failed, its status not applied", iv.object)
	}

	// The Lease is released: the standby takes it at once.
	require.NotEqual(t, "pod-a", holder(t, admin.kube, ns), "the Lease isn't released on SIGTERM")
	wait.For(t, 30*time.Second, func() bool { return holder(t, admin.kube, ns) == "pod-b" }, "pod-b never takes the Lease", b)
	acquired := lease(t, admin.kube, ns).Spec.AcquireTime.Time
	takeover := acquired.Sub(exited)
	bound := settings.TakeoverReleased(500 * time.Millisecond)
	latency := wires["pod-b"].leaseTime(exited.Add(-bound), acquired)
	require.LessOrEqual(t, takeover, bound+latency, "pod-b took the released Lease %v after pod-a exited, past 2.2 RetryPeriods and the %v its Lease requests took", takeover, latency)

	// The standby continues the backlog: every Widget reflects its spec.
	wait.For(t, time.Duration(objects)*reconcileTime+time.Minute, func() bool {
		ws, children := listWidgets(t, admin, ns)
		return len(ws) == objects && converged(ws, children) == objects
	}, "pod-b doesn't reconcile the backlog", b)
	byA := map[string]bool{}
	for _, call := range slow.of("pod-a") {
		byA[call.name] = true
	}
	byB := map[string]bool{}
	for _, call := range slow.of("pod-b") {
		byB[call.name] = true
	}
	for i := range objects {
		name := fmt.Sprintf("w%03d", i)
		require.True(t, byA[name] || byB[name], "%s: never reconciled", name)
	}
	require.Equal(t, 0, b.Stop())

	figure(t, "reconciles in flight at SIGTERM, finished uncancelled", "%d, %d", inFlight, inFlight)
	figure(t, fmt.Sprintf("SIGTERM to exit 0, reconciles of %v in flight", reconcileTime), "%v", exited.Sub(signalled).Round(time.Millisecond))
	figure(t, "exit to the standby holding the released Lease (LeaseDuration 1m)", "%v", takeover.Round(time.Millisecond))
	figure(t, "Widgets reconciled by the leader before SIGTERM, by the standby, lost", "%d, %d, 0", len(byA), len(byB))
}
