package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// shardCount is the sharded tests' Settings.Shards.
const shardCount = 8

// startSharded runs replica identity of the Widget controller with
// shards shards, the leader tests' short Lease, and a Reconciler that
// takes a few milliseconds, long enough for two replicas' reconciles of
// one object to overlap if the shards' Leases let them.
func startSharded(t *testing.T, c connectionFor, ns, identity string, shards int) *replica {
	t.Helper()
	s := settingsFor(ns, identity)
	s.Shards = shards
	s.Workers = 4
	s.LeaderElection.LeaseDuration = killLeaseDuration
	s.LeaderElection.RenewDeadline = killRenewDeadline
	s.LeaderElection.RetryPeriod = killRetryPeriod
	return startReplica(t, c.Connection(), s, func(k kubernetes.Interface) kube.Reconciler[widgetSpec, widgetStatus] {
		return kube.ReconcilerFunc[widgetSpec, widgetStatus](func(ctx context.Context, w widget) (kube.Result[widgetStatus], error) {
			pause(ctx, 5*time.Millisecond)
			return reconcileWidget(ctx, k, w)
		})
	})
}

// connectionFor is what startSharded needs of a cluster.
type connectionFor interface{ Connection() kube.Connection }

// shardHolders returns the identity whose replica holds each shard's
// Lease in ns, as the Lease names it: "" for a shard nobody holds.
// A replica holds its Leases as <identity>_<incarnation>.
func shardHolders(t *testing.T, k kubernetes.Interface, ns string) map[int]string {
	t.Helper()
	list, err := k.CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "loam.dev/controller=" + controllerName})
	require.NoError(t, err)
	out := map[int]string{}
	for _, l := range list.Items {
		i, ok := l.Labels["loam.dev/shard"]
		if !ok {
			continue
		}
		var n int
		_, err := fmt.Sscan(i, &n)
		require.NoError(t, err)
		id, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_")
		out[n] = id
	}
	return out
}

// balanced reports whether every shard is held and each identity of
// replicas holds its quota: the count split evenly, the first in identity
// order one more.
func balanced(holders map[int]string, count int, identities ...string) bool {
	if len(holders) != count {
		return false
	}
	held := map[string]int{}
	for _, h := range holders {
		if !slices.Contains(identities, h) {
			return false
		}
		held[h]++
	}
	for _, id := range identities {
		if held[id] < count/len(identities) || held[id] > (count+len(identities)-1)/len(identities) {
			return false
		}
	}
	return true
}

// sameObjectOverlaps returns every pair of reconciles of one object by
// two replicas whose intervals overlap.
func sameObjectOverlaps(all []interval) [][2]interval {
	byObject := map[string][]interval{}
	for _, iv := range all {
		byObject[iv.object] = append(byObject[iv.object], iv)
	}
	var found [][2]interval
	for _, ivs := range byObject {
		found = append(found, overlaps(ivs)...)
	}
	return found
}

// TestChaos_shards runs the Widget controller sharded 8 ways while a
// loader changes Widgets: one replica, then three, a crash of one (its
// network cut, then stopped, so its Leases are left to expire), a
// SIGTERM of another (which releases its Leases), a partition of a
// third (which exits 1, its Leases lost), and back to one. After
// each step the shards are spread as the quotas say, the shards of a
// crashed replica are taken within the derived takeover bound, no object
// is ever reconciled by two replicas at once, and in the end every Widget
// reflects its latest spec.
func TestChaos_shards(t *testing.T) {
	objects := sized(60, 300, 1000)
	c := startCluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)

	var replicas []*replica
	start := func(id string) *replica {
		r := startSharded(t, c, ns, id, shardCount)
		replicas = append(replicas, r)
		return r
	}
	alive := func() []*replica { return slices.DeleteFunc(slices.Clone(replicas), (*replica).exited) }
	spread := func(what string, ids ...string) {
		t.Helper()
		wait.For(t, time.Minute, func() bool { return balanced(shardHolders(t, admin.kube, ns), shardCount, ids...) },
			fmt.Sprintf("%s: the shards are not spread over %v", what, ids), wait.All(alive())...)
	}
	var behind []string
	t.Cleanup(func() {
		if t.Failed() && len(behind) > 0 {
			t.Logf("behind: %v", behind)
		}
	})
	convergedAll := func(what string) {
		t.Helper()
		wait.For(t, 2*time.Minute, func() bool {
			ws, children := listWidgets(t, admin, ns)
			behind = behind[:0]
			for _, w := range ws {
				if converged([]widget{w}, children) == 0 {
					behind = append(behind, fmt.Sprintf("%s (shard %d, generation %d, status %+v, child %q)",
						w.Name, shard.Of(string(w.UID), shardCount), w.Generation, w.Status, children[w.Name].Data["value"]))
				}
			}
			return len(ws) == objects && len(behind) == 0
		}, what+": not every Widget reflects its latest spec", wait.All(alive())...)
	}

	start("pod-0")
	spread("one replica", "pod-0")
	load := startLoader(admin.dynamic, ns, objects, 4)
	t.Cleanup(load.stop)

	// Scale to three while Widgets change.
	start("pod-1")
	start("pod-2")
	spread("three replicas", "pod-0", "pod-1", "pod-2")
	wait.For(t, 2*time.Minute, func() bool { return load.created.Load() == int64(objects) },
		"the loader never created every Widget", wait.All(alive())...)

	// A crash: pod-1's Leases are left to expire, then move.
	crashed := replicas[1]
	before := shardHolders(t, admin.kube, ns)
	killed := time.Now()
	crashed.network.Cut()
	crashed.Stop()
	spread("after pod-1 crashed", "pod-0", "pod-2")
	var orphans []int
	for s, h := range before {
		if h == "pod-1" {
			orphans = append(orphans, s)
		}
	}
	require.NotEmpty(t, orphans)
	// The promise of docs/kubernetes.md: a crashed replica's shards are
	// taken, at the latest, settings.Takeover's latest after the last
	// renewal the others saw — the whole-second LeaseDuration and two of
	// client-go's jittered retry gaps, 6.2 s at these timings — so within
	// that of the crash. Each Lease's acquireTime is when its taker sent
	// the taking request.
	_, bound := settings.Takeover(killLeaseDuration, killRetryPeriod)
	var moved time.Duration
	for _, s := range orphans {
		l, err := admin.kube.CoordinationV1().Leases(ns).Get(t.Context(), fmt.Sprintf("%s-shard-%d", controllerName, s), metav1.GetOptions{})
		require.NoError(t, err)
		moved = max(moved, l.Spec.AcquireTime.Sub(killed))
	}
	require.LessOrEqual(t, moved, bound, "pod-1's shards %v were taken %v after it crashed", orphans, moved)

	// A SIGTERM: pod-2 releases its Leases once its reconciles are done.
	require.Equal(t, 0, replicas[2].Stop(), "pod-2: SIGTERM: a clean exit")
	released := time.Now()
	spread("after pod-2 stopped", "pod-0")
	figure(t, "a SIGTERMed replica's shards taken by another", "%v", time.Since(released).Round(time.Millisecond))

	// A partition: pod-3, cut off, can't renew its Leases, so it stops
	// reconciling and exits 1 as a lost leader does; pod-0 takes its shards
	// once they expire.
	partitioned := start("pod-3")
	spread("pod-3 joined", "pod-0", "pod-3")
	partitioned.network.Cut()
	require.Equal(t, 1, partitioned.Wait(), "pod-3: a replica that lost a shard's Lease exits 1")
	require.Contains(t, partitioned.failure(), kube.ErrLostLeadership.Error())
	spread("after pod-3 was cut off", "pod-0")

	load.stop()
	convergedAll("one replica again")
	figure(t, "a crashed replica's shards taken, after the crash (bound)", "%v (%v)", moved.Round(time.Millisecond), bound)

	for _, r := range replicas {
		if !r.exited() {
			require.Equal(t, 0, r.Stop(), "replica %s: SIGTERM: a clean exit", r.identity)
		}
	}
	var all []interval
	counts := map[string]int{}
	for _, r := range replicas {
		ivs := r.reconciles()
		all = append(all, ivs...)
		counts[r.identity] = len(ivs)
	}
	for _, o := range sameObjectOverlaps(all) {
		t.Errorf("%s reconciled %s from %s to %s, while %s reconciled it from %s to %s",
			o[0].replica, o[0].object, o[0].start.Format(time.StampMicro), o[0].end.Format(time.StampMicro),
			o[1].replica, o[1].start.Format(time.StampMicro), o[1].end.Format(time.StampMicro))
	}
	for _, id := range []string{"pod-1", "pod-2", "pod-3"} {
		require.Positive(t, counts[id], "%s reconciled nothing: the shards never spread", id)
	}
	figure(t, "objects, shards, reconciles by replica, overlapping reconciles of one object", "%d, %d, %v, %d", objects, shardCount, counts, len(sameObjectOverlaps(all)))
}

// TestChaos_shards_refused starts replicas that must not run beside a
// sharded one: one with another number of shards, whose ranges would
// overlap its shards', and one with its identity. Each exits 1 with an
// error that says why, and the first goes on holding every shard.
func TestChaos_shards_refused(t *testing.T) {
	c := startCluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)
	first := startSharded(t, c, ns, "pod-0", 4)
	wait.For(t, time.Minute, func() bool { return balanced(shardHolders(t, admin.kube, ns), 4, "pod-0") }, "pod-0 never holds the shards", first)

	for _, tc := range []struct {
		identity string
		shards   int
		want     string
	}{
		{"pod-1", 8, kube.ErrShardCount.Error()},
		{"pod-0", 4, kube.ErrSharedIdentity.Error()},
	} {
		r := startSharded(t, c, ns, tc.identity, tc.shards)
		require.Equal(t, 1, r.Wait(), "%s with %d shards beside pod-0 with 4: exit 1", tc.identity, tc.shards)
		require.Contains(t, r.failure(), tc.want)
		require.True(t, balanced(shardHolders(t, admin.kube, ns), 4, "pod-0"), "pod-0 still holds every shard: %v", shardHolders(t, admin.kube, ns))
		require.False(t, first.exited())
	}
	require.Equal(t, 0, first.Stop())
}
