package chaos

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// slowReconcile is longer than the chaos timings' LeaseDuration (4 s): a
// Lease's hand-off that stopped renewing it before its reconciles
// returned would let another replica take it while they run (issue 42).
const slowReconcile = 10 * time.Second

// slowShards is the slow rounds' Settings.Shards when sharded: two, so
// two replicas each hold one and a third holds none.
const slowShards = 2

// slowWidgets is how many Widgets a slow round reconciles: as many as a
// replica's workers, so one batch of reconciles takes them all, and
// enough that both shards almost surely have some (all in one: 1 in 8).
const slowWidgets = 4

// inFlight counts each replica's reconciles running.
type inFlight struct {
	mu sync.Mutex
	n  map[string]*atomic.Int64
}

func (f *inFlight) of(identity string) *atomic.Int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]*atomic.Int64{}
	}
	if f.n[identity] == nil {
		f.n[identity] = &atomic.Int64{}
	}
	return f.n[identity]
}

// startSlow runs replica identity of the Widget controller, with shards
// shards (0 for one leader), the chaos timings' Lease, the default
// DrainTimeout (15 s, longer than a reconcile), and a Reconciler that
// takes slowReconcile.
func startSlow(t *testing.T, c connectionFor, ns, identity string, shards int, running *inFlight) *replica {
	t.Helper()
	s := settingsFor(ns, identity)
	s.Shards = shards
	s.Workers = 4
	s.LeaderElection.LeaseDuration = killLeaseDuration
	s.LeaderElection.RenewDeadline = killRenewDeadline
	s.LeaderElection.RetryPeriod = killRetryPeriod
	n := running.of(identity)
	return startReplica(t, c.Connection(), s, func(k kubernetes.Interface) kube.Reconciler[widgetSpec, widgetStatus] {
		return kube.ReconcilerFunc[widgetSpec, widgetStatus](func(ctx context.Context, w widget) (kube.Result[widgetStatus], error) {
			n.Add(1)
			defer n.Add(-1)
			pause(ctx, slowReconcile)
			return reconcileWidget(ctx, k, w)
		})
	})
}

// TestChaos_slow_reconciles hands Leases off while every reconcile takes
// longer than LeaseDuration, in rounds that are sharded (two shards) and
// not in turn. In a round, pod-0 reconciles alone; pod-1 joins while
// pod-0's reconciles run (a rebalance, sharded); pod-2 joins and is
// SIGTERMed while pod-0 still drains (sharded); pod-0, while its
// reconciles run, is cut off from the API server (sharded rounds, one in
// two of make chaos's, the first of make test's) or SIGTERMed (the
// others); then a change to a Widget of each shard is reconciled within
// the bound of a hand-off: the drain of a reconcile in flight, or the cut
// replica's fence, then a take, then the reconcile itself. No object is
// ever reconciled by two replicas at once, nor, unsharded, any two
// objects. `make test` runs a round of each; `make chaos` 20.
func TestChaos_slow_reconciles(t *testing.T) {
	rounds := 2
	if *full {
		rounds = 20
	}
	c := startCluster(t)
	admin := adminClients(t, c)
	for round := range rounds {
		shards, cut := 0, false
		if round%2 == 0 {
			shards, cut = slowShards, round%4 == 0
		}
		end := "SIGTERM"
		if cut {
			end = "cut off"
		}
		t.Run(fmt.Sprintf("round %d, %d shards, pod-0 %s", round+1, shards, end), func(t *testing.T) {
			slowRound(t, c, admin, shards, cut)
		})
	}
}

// slowRound is one round of TestChaos_slow_reconciles: pod-0 ends cut
// off from the API server when cut, else SIGTERMed.
func slowRound(t *testing.T, c *kubetest.Cluster, admin clients, shards int, cut bool) {
	ns := c.Namespace(t)
	running := &inFlight{}
	var replicas []*replica
	start := func(id string) *replica {
		r := startSlow(t, c, ns, id, shards, running)
		replicas = append(replicas, r)
		return r
	}
	names := make([]string, slowWidgets)
	for i := range names {
		names[i] = fmt.Sprintf("slow-%d", i)
	}
	value := int64(1)
	change := func() {
		t.Helper()
		value++
		for _, n := range names {
			_, err := setValue(t.Context(), admin.dynamic, ns, n, value)
			require.NoError(t, err)
		}
	}
	busy := func(r *replica, what string) {
		t.Helper()
		wait.For(t, time.Minute, func() bool { return running.of(r.identity).Load() > 0 }, what+": "+r.identity+" reconciles nothing", r)
	}

	pod0 := start("pod-0")
	wait.For(t, time.Minute, func() bool { return pod0.synced(t) }, "pod-0 never synced", pod0)
	for _, n := range names {
		_, err := createWidget(t.Context(), admin.dynamic, ns, n, value)
		require.NoError(t, err)
	}
	busy(pod0, "created")

	// pod-1 joins mid-reconcile: sharded, pod-0 hands a shard off.
	pod1 := start("pod-1")
	if shards > 0 {
		// pod-2 joins and leaves while pod-0 still drains.
		pod2 := start("pod-2")
		wait.For(t, time.Minute, func() bool { return pod2.synced(t) }, "pod-2 never synced", pod2)
		require.Equal(t, 0, pod2.Stop(), "pod-2: SIGTERM: a clean exit")
	}
	wait.For(t, time.Minute, func() bool { return pod1.synced(t) }, "pod-1 never synced", pod1)

	// pod-0 SIGTERMed, or cut off, mid-reconcile. Cut off, it fences
	// itself FenceAfter the last renewal the API server accepted,
	// cancelling its reconciles before another replica may take its
	// Leases, and exits 1 as a lost leader does.
	change()
	busy(pod0, "changed")
	if cut {
		pod0.network.Cut()
		require.Equal(t, 1, pod0.Wait(), "pod-0: cut off: a lost Lease exits 1")
		require.Contains(t, pod0.failure(), kube.ErrLostLeadership.Error())
	} else {
		require.Equal(t, 0, pod0.Stop(), "pod-0: SIGTERM: a clean exit")
	}

	// The bound of a hand-off once pod-0 has exited: pod-1 takes the
	// Lease within settings.Takeover's latest of pod-0's last renewal at
	// worst (released, it takes it within a retry gap), may have a
	// reconcile of the change before in flight, and reconciles this one.
	change()
	changed := time.Now()
	_, takeover := settings.Takeover(killLeaseDuration, killRetryPeriod)
	bound := takeover + 2*slowReconcile
	wait.For(t, bound, func() bool {
		ws, children := listWidgets(t, admin, ns)
		return len(ws) == len(names) && converged(ws, children) == len(names)
	}, "a change after the hand-offs is not reconciled within their bound", pod1)
	figure(t, fmt.Sprintf("slow reconciles, %d shards, pod-0 %s: a change after the hand-offs reconciled", shards, map[bool]string{true: "cut off", false: "SIGTERMed"}[cut]), "%v", time.Since(changed).Round(time.Millisecond))
	require.Equal(t, 0, pod1.Stop(), "pod-1: SIGTERM: a clean exit")

	var all []interval
	for _, r := range replicas {
		all = append(all, r.reconciles()...)
	}
	found := sameObjectOverlaps(all)
	if shards == 0 {
		found = overlaps(all)
	}
	for _, o := range found {
		t.Errorf("%s reconciled %s from %v to %v, and %s %s from %v to %v",
			o[0].replica, o[0].object, o[0].start.Format("15:04:05.000"), o[0].end.Format("15:04:05.000"),
			o[1].replica, o[1].object, o[1].start.Format("15:04:05.000"), o[1].end.Format("15:04:05.000"))
	}
	require.Empty(t, found, "reconciles of %d overlapped", len(found))
}
