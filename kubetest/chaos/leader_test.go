package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The leader tests' Lease: short, so a standby takes it over in about
// four seconds, and fenced with a margin of a second
// (settings.FenceMargin): a leader cut off from the API server stops
// leading RetryPeriod + RenewDeadline, 2.5s, after its last renewal, and a
// standby takes the Lease no sooner than its 4 whole seconds after the
// first renewal stamped in the last one's second, at most 0.5s before it,
// so no sooner than 3.5s after it. client-go asks only for RenewDeadline <
// LeaseDuration; 3s, 2s and 0.5s, which keep that, have no margin at all.
const (
	killLeaseDuration = 4 * time.Second
	killRenewDeadline = 2 * time.Second
	killRetryPeriod   = 500 * time.Millisecond
)

// TestChaos_leader_killed kills the leader of three replicas again and
// again, while a loader changes Widgets, in three ways in turn: a crash
// while a reconcile is in flight (its network cut, then stopped, the
// Lease kept), a partition (its network cut, left to notice by itself,
// the Lease kept) and a SIGTERM (a graceful stop that releases the
// Lease). After each kill a new replica joins, so two standbys always
// wait. Every time, a standby takes the Lease over within
// settings.Takeover's bounds: no sooner than the Lease's whole seconds
// after the first renewal of the last one's second, and no later than its
// latest after the kill, plus the time its Lease requests took (after a
// SIGTERM, from the release to settings.TakeoverReleased after the exit,
// give or take those requests). The test watches the Lease's every
// version, each read once, so the takeover's acquireTime is the new
// holder's own. No two replicas ever reconcile at the same time; the partitioned
// leader exits with ErrLostLeadership and the SIGTERMed one with 0; the
// new leader, its caches warm, lists nothing again between the kill and
// its first reconcile (counted at a Proxy in front of each replica); and
// in the end every Widget reflects its latest spec.
func TestChaos_leader_killed(t *testing.T) {
	kills := sized(3, 6, 100)
	const objects = 10
	c := startCluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)

	var replicas []*replica
	// Each replica reaches the API server through a Proxy of its own,
	// which counts its lists and times its Lease requests.
	wires := map[string]*wire{}
	// inFlight counts each replica's reconciles in flight, so a crash can
	// come in the middle of one.
	inFlight := map[string]*atomic.Int32{}
	start := func(i int) *replica {
		s := settingsFor(ns, fmt.Sprintf("pod-%d", i))
		s.Workers = 2
		s.LeaderElection.LeaseDuration = killLeaseDuration
		s.LeaderElection.RenewDeadline = killRenewDeadline
		s.LeaderElection.RetryPeriod = killRetryPeriod
		conn, seen := proxied(t, c)
		wires[s.LeaderElection.Identity] = seen
		busy := &atomic.Int32{}
		inFlight[s.LeaderElection.Identity] = busy
		r := startReplica(t, conn, s, func(k kubernetes.Interface) kube.Reconciler[widgetSpec, widgetStatus] {
			return kube.ReconcilerFunc[widgetSpec, widgetStatus](func(ctx context.Context, w widget) (kube.Result[widgetStatus], error) {
				busy.Add(1)
				defer busy.Add(-1)
				// Long enough for reconciles of two replicas to overlap, if
				// the Lease let them.
				pause(ctx, 20*time.Millisecond)
				return reconcileWidget(ctx, k, w)
			})
		})
		replicas = append(replicas, r)
		return r
	}
	alive := func() []*replica {
		return slices.DeleteFunc(slices.Clone(replicas), (*replica).exited)
	}
	byIdentity := func(id string) *replica {
		for _, r := range replicas {
			if r.identity == id {
				return r
			}
		}
		return nil
	}

	load := startLoader(admin.dynamic, ns, objects, 1)
	t.Cleanup(load.stop)
	start(0)
	wait.For(t, time.Minute, func() bool { return holder(t, admin.kube, ns) == "pod-0" }, "pod-0 never leads", wait.All(replicas)...)
	start(1)
	start(2)
	wait.For(t, time.Minute, func() bool {
		return !slices.ContainsFunc(replicas, func(r *replica) bool { return !r.synced(t) })
	}, "a replica never synced", wait.All(replicas)...)

	var takeovers, released, firstReconciles, margins []time.Duration
	var takeoverLists int64
	var latencies []time.Duration
	_, kept := settings.Takeover(killLeaseDuration, killRetryPeriod)
	releasing := settings.TakeoverReleased(killRetryPeriod)
	var crashes, partitions, sigterms, lostBefore, sameSecond int
	var sinceRenewal, aboveLowest, lastToTaken, releaseToTaken []time.Duration
	whole := settings.LeaseSeconds(killLeaseDuration)
	// Every version of the Lease from here on, each read once: a round's
	// bounds count from renewals that may precede it, by up to a second.
	versions := watchLease(t, admin.kube, ns)
	versions.watchedASecond(t, wait.All(replicas)...)
	for round := range kills {
		versions.drain(t)
		leader := byIdentity(ptr.Deref(versions.latest().Spec.HolderIdentity, ""))
		require.NotNil(t, leader, "round %d: no replica holds the Lease", round+1)
		require.False(t, leader.exited(), "round %d: the leader %s holds the Lease but has exited", round+1, leader.identity)
		standbys := slices.DeleteFunc(alive(), func(r *replica) bool { return r == leader })
		// Let the leader work a little, so it is killed mid-stream.
		time.Sleep(300 * time.Millisecond)

		kind := killKinds[round%len(killKinds)]
		// Every standby has synced: what each has listed so far.
		listedBefore := map[string]int64{}
		for _, r := range standbys {
			listedBefore[r.identity] = wires[r.identity].lists.Load()
			require.Positive(t, listedBefore[r.identity], "round %d: the proxy counted none of %s's first lists", round+1, r.identity)
		}
		bound := kept
		var killed time.Time
		// What the Lease says just before the kill: whether the leader
		// still holds it, and when it last renewed it. A leader starved
		// of CPU for RenewDeadline loses the Lease by itself, before any
		// kill; such a round is counted, not taken for a fast takeover.
		var (
			before    *coordinationv1.Lease
			stillHeld bool
		)
		switch kind {
		case killCrash:
			crashes++
			// In the middle of a reconcile: the loader keeps the leader
			// busy, and each reconcile pauses 20 ms.
			wait.For(t, time.Minute, func() bool { return inFlight[leader.identity].Load() > 0 },
				fmt.Sprintf("round %d: the leader %s never reconciles", round+1, leader.identity), leader)
			before, stillHeld = leaseBeforeKill(t, admin.kube, ns, leader.identity)
			killed = time.Now()
			leader.network.Cut()
			leader.Stop()
		case killPartition:
			partitions++
			before, stillHeld = leaseBeforeKill(t, admin.kube, ns, leader.identity)
			killed = time.Now()
			leader.network.Cut()
		case killSIGTERM:
			sigterms++
			// The leader releases the Lease as it exits, so the bound
			// runs from its exit.
			require.Equal(t, 0, leader.Stop(), "round %d: SIGTERM: the leader %s exits 0", round+1, leader.identity)
			killed = time.Now()
			bound = releasing
		}

		// A standby takes the Lease over: the first version held by
		// another, whose acquireTime its taker stamped.
		var taken *coordinationv1.Lease
		wait.For(t, bound+time.Minute, func() bool {
			taken = versions.next(t, leader.identity)
			return taken != nil
		}, fmt.Sprintf("round %d: no standby takes the Lease over", round+1), wait.All(standbys)...)
		next := byIdentity(ptr.Deref(taken.Spec.HolderIdentity, ""))
		require.NotNil(t, next, "round %d: the Lease went to a stranger: %s", round+1, describeLease(taken))
		require.Contains(t, standbys, next, "round %d: the Lease went to %s, not a standby", round+1, next.identity)
		acquired := taken.Spec.AcquireTime.Time
		takeover := acquired.Sub(killed)
		// The standby's tries that could count: from the last renewal,
		// at most a RetryPeriod and its renewal's time before the kill,
		// to the acquiring try.
		latency := wires[next.identity].leaseTime(killed.Add(-bound), acquired)
		require.LessOrEqual(t, takeover, bound+latency,
			"round %d, %s: the standby took over %v after the kill, past the bound of %v for Lease timings %v/%v/%v and %v of its Lease requests",
			round+1, kind, takeover, bound, killLeaseDuration, killRenewDeadline, killRetryPeriod, latency)
		if kind == killSIGTERM {
			// Stamped by the try that read the released Lease: the try
			// stamps acquireTime as it starts, then reads the Lease, so
			// the release came before the end of the first Lease
			// request begun at or after the stamp. (That request is the
			// read; the time from the stamp to it, a goroutine's
			// scheduling under load, is on neither side: bounding the
			// stamp by the requests before it failed by 1.8 ms once.)
			r := versions.released(t, taken)
			read, ok := wires[next.identity].firstLeaseEnd(acquired)
			require.True(t, ok, "round %d: %s sent no Lease request after stamping acquireTime %s", round+1, next.identity, acquired.Format(time.StampMicro))
			require.False(t, r.Spec.RenewTime.After(read),
				"round %d: the standby's acquireTime %s was stamped by a try whose read of the Lease ended at %s, before the release, %s",
				round+1, acquired.Format(time.StampMicro), read.Format(time.StampMicro), describeLease(r))
			released = append(released, takeover)
			releaseToTaken = append(releaseToTaken, acquired.Sub(r.Spec.RenewTime.Time))
		} else {
			// No sooner than the Lease's whole seconds after the first
			// renewal stamped in the last one's second, exactly: the
			// standby's observedTime came after that renewal was stored,
			// and it takes the Lease at the first try whose start is that
			// many seconds later. Requests only make it later.
			last, first := versions.renewals(t, leader.identity, taken)
			lowest := first.Spec.RenewTime.Add(whole)
			require.False(t, acquired.Before(lowest),
				"round %d, %s: the standby's acquireTime %s is before %s, %v after the first renewal of the leader's last second: %s",
				round+1, kind, acquired.Format(time.StampMicro), lowest.Format(time.StampMicro), whole, describeLease(first))
			aboveLowest = append(aboveLowest, acquired.Sub(lowest))
			lastToTaken = append(lastToTaken, acquired.Sub(last.Spec.RenewTime.Time))
			if first != last {
				sameSecond++
			}
		}
		latencies = append(latencies, latency)
		if kind != killSIGTERM {
			if !stillHeld {
				lostBefore++
			} else {
				sinceRenewal = append(sinceRenewal, killed.Sub(before.Spec.RenewTime.Time))
			}
		}
		if kind != killSIGTERM {
			takeovers = append(takeovers, takeover)
		}

		switch kind {
		case killPartition:
			// The cut-off leader notices by itself: its renewals fail for
			// RenewDeadline, so Serve ends with ErrLostLeadership.
			require.Equal(t, 1, leader.Wait(), "round %d: a leader that lost its Lease exits 1", round+1)
			require.Equal(t, kube.ErrLostLeadership.Error(), leader.failure())
			// How long before the standby took the Lease the cut-off
			// leader's last reconcile ended: the fence's margin.
			if ivs := leader.reconciles(); len(ivs) > 0 {
				last := slices.MaxFunc(ivs, func(a, b interval) int { return a.end.Compare(b.end) })
				margins = append(margins, acquired.Sub(last.end))
			}
		case killCrash:
			leader.Wait()
		}

		// The new leader, its caches warm, reconciles at once.
		wait.For(t, time.Minute, func() bool {
			for _, iv := range next.reconciles() {
				if iv.start.After(acquired) {
					firstReconciles = append(firstReconciles, iv.start.Sub(killed))
					return true
				}
			}
			return false
		}, fmt.Sprintf("round %d: the new leader %s doesn't reconcile", round+1, next.identity), next)
		// Its caches were warm: it took over and reconciled without
		// listing anything again.
		relists := wires[next.identity].lists.Load() - listedBefore[next.identity]
		require.Zero(t, relists, "round %d: the new leader %s listed %d times between the kill and its first reconcile", round+1, next.identity, relists)
		takeoverLists += relists

		// A new replica joins, so two standbys wait again.
		joined := start(3 + round)
		wait.For(t, time.Minute, func() bool { return joined.synced(t) }, "the new replica never synced", wait.All(alive())...)
	}

	load.stop()
	leader := byIdentity(holder(t, admin.kube, ns))
	require.NotNil(t, leader)
	wait.For(t, time.Minute, func() bool {
		ws, children := listWidgets(t, admin, ns)
		return len(ws) == objects && converged(ws, children) == objects
	}, "not every Widget reflects its latest spec", wait.All(alive())...)

	for _, r := range alive() {
		require.Equal(t, 0, r.Stop(), "replica %s: SIGTERM: a clean exit", r.identity)
	}
	var all []interval
	perReplica := map[string]int{}
	for _, r := range replicas {
		ivs := r.reconciles()
		all = append(all, ivs...)
		perReplica[r.identity] = len(ivs)
	}
	for _, o := range overlaps(all) {
		t.Errorf("%s reconciled %s from %s to %s, while %s reconciled %s from %s to %s",
			o[0].replica, o[0].object, o[0].start.Format(time.StampMicro), o[0].end.Format(time.StampMicro),
			o[1].replica, o[1].object, o[1].start.Format(time.StampMicro), o[1].end.Format(time.StampMicro))
	}

	lowest, median, highest := percentiles(takeovers)
	figure(t, "leaders killed (crash mid-reconcile, partition, SIGTERM)", "%d (%d, %d, %d)", kills, crashes, partitions, sigterms)
	figure(t, "Lease: LeaseDuration, RenewDeadline, RetryPeriod", "%v, %v, %v", killLeaseDuration, killRenewDeadline, killRetryPeriod)
	figure(t, "crash or partition: kill to Lease acquired by a standby (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	lowest, median, highest = percentiles(released)
	figure(t, "SIGTERM: the leader's exit to its released Lease acquired by a standby (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	lowest, median, highest = percentiles(sinceRenewal)
	figure(t, "crash or partition: the leader's last renewal before the kill (min/median/max); rounds whose leader had lost the Lease before the kill", "%v / %v / %v; %d", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond), lostBefore)
	lowest, median, highest = percentiles(latencies)
	figure(t, "bounds: whole-second LeaseDuration + 4.4 RetryPeriods (kept), 2.2 RetryPeriods (released), + the standby's Lease requests (min/median/max)", "%v, %v + %v / %v / %v", kept, releasing, lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	lowest, median, highest = percentiles(aboveLowest)
	figure(t, "crash or partition: acquireTime after the lower bound, whole-second LeaseDuration after the first renewal of the last one's second (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	lowest, median, highest = percentiles(lastToTaken)
	figure(t, "crash or partition: the leader's last renewal to the acquireTime (min/median/max); rounds whose last renewal shared its second with the one before", "%v / %v / %v; %d", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond), sameSecond)
	lowest, median, highest = percentiles(releaseToTaken)
	figure(t, "SIGTERM: the release's renewTime to the acquireTime (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	figure(t, "the fence's margin at these timings (settings.FenceMargin)", "%v", settings.FenceMargin(killLeaseDuration, killRenewDeadline, killRetryPeriod))
	lowest, median, highest = percentiles(firstReconciles)
	figure(t, "kill to the new leader's first reconcile (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	lowest, median, highest = percentiles(margins)
	figure(t, "partition: the cut-off leader's last reconcile ended, before the standby acquired (min/median/max)", "%v / %v / %v", lowest.Round(time.Millisecond), median.Round(time.Millisecond), highest.Round(time.Millisecond))
	figure(t, "reconciles, replicas, overlapping reconciles of two replicas", "%d, %d, %d", len(all), len(replicas), len(overlaps(all)))
	figure(t, "lists (LIST, or watch with initial events) by a new leader, kill to first reconcile", "%d", takeoverLists)
}

// killKind is how TestChaos_leader_killed kills a leader.
type killKind string

const (
	killCrash     killKind = "crash mid-reconcile"
	killPartition killKind = "partition"
	killSIGTERM   killKind = "SIGTERM"
)

// killKinds are the kills in the order the rounds take them.
var killKinds = []killKind{killCrash, killPartition, killSIGTERM}

// leaseBeforeKill reads the Lease just before a kill, and reports whether
// leader still holds it.
func leaseBeforeKill(t *testing.T, k kubernetes.Interface, ns, leader string) (*coordinationv1.Lease, bool) {
	t.Helper()
	l := lease(t, k, ns)
	require.NotNil(t, l, "no Lease before the kill")
	return l, ptr.Deref(l.Spec.HolderIdentity, "") == leader
}
