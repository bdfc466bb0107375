package sharded

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// everyTile is the one value of a cacheCount's Index: every Tile the
// primary cache holds is listed under it.
var everyTile = kube.Key{Name: "every-tile"}

// cacheCount reads what one replica's primary cache holds, through the
// library's own read of it: an Index that lists every cached Tile under
// one key, so that List returns the informers' stores whole — those of
// the shards the replica holds, each its own when the API server shards.
type cacheCount struct {
	index *kube.Index[kube.Object[tileSpec, tileStatus]]
}

func newCacheCount() cacheCount {
	return cacheCount{index: kube.NewIndex("every-tile", func(kube.Object[tileSpec, tileStatus]) []kube.Key {
		return []kube.Key{everyTile}
	})}
}

// part is what the replica's NewController keeps the Index with.
func (c cacheCount) part() kube.Part { return kube.Indexes(c.index) }

// uids returns the uid of every Tile the primary cache holds.
func (c cacheCount) uids() (map[string]bool, error) {
	objs, err := c.index.List(everyTile)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(objs))
	for _, o := range objs {
		out[string(o.UID)] = true
	}
	return out, nil
}

// checkCaches waits until each replica's primary cache, counts[id], holds
// exactly the Tiles of uids, the n of ns, whose shards its Leases hold,
// and returns how many each holds, in the order of ids: the caches split
// as the shards do, none holding another's object nor missing one of its
// own.
func checkCaches(t *testing.T, k kubernetes.Interface, ns string, ids []string, counts map[string]cacheCount, uids map[string]string, apps []wait.Watched) []int {
	t.Helper()
	var got map[string]map[string]bool
	var want map[string]map[string]bool
	var unread string // the last read that failed, if the last try's did
	wait.For(t, time.Minute, func() bool {
		unread = ""
		held := tileHolders(t, k, ns)
		want, got = map[string]map[string]bool{}, map[string]map[string]bool{}
		for _, id := range ids {
			want[id] = map[string]bool{}
			stored, err := counts[id].uids()
			if err != nil {
				// A replica that took a shard lists it before its
				// cache reads: not yet, rather than wrong (at N =
				// 10,000 a read came before the sync).
				unread = fmt.Sprintf("%s: reading its primary cache: %v", id, err)
				return false
			}
			got[id] = stored
		}
		for uid := range uids {
			if id, ok := held[shard.Of(uid, measureShards)]; ok && want[id] != nil {
				want[id][uid] = true
			}
		}
		return maps.EqualFunc(want, got, maps.Equal)
	}, "the replicas' primary caches never held exactly their shards' objects", append(apps, wait.LastSeen(func() string {
		var b strings.Builder
		for _, id := range ids {
			mine := 0
			for uid := range got[id] {
				mine += boolInt(want[id][uid])
			}
			fmt.Fprintf(&b, "%s caches %d Tiles, %d of them of its shards, which hold %d; ", id, len(got[id]), mine, len(want[id]))
		}
		return b.String() + unread
	}))...)
	out := make([]int, len(ids))
	total := 0
	for i, id := range ids {
		out[i] = len(got[id])
		total += out[i]
	}
	require.Equal(t, len(uids), total, "the replicas' primary caches together: every Tile, each once")
	return out
}

// balanceBound is the bound on what each of r replicas caches of
// n objects: within ±10 % of n/r.
func balanceBound(n, r int) (lo, hi float64) {
	share := float64(n) / float64(r)
	return 0.9 * share, 1.1 * share
}

// balanceSound reports whether n objects whose uids a fair hash spreads
// over r replicas land within balanceBound on every replica all but about
// once in a hundred thousand runs: each replica's count is binomial, with
// a standard deviation σ of √(n·(1/r)·(1−1/r)), and the bound must be 5σ
// or more. At N = 200 it is 1.4σ for R = 2 and 0.8σ for R = 4, which a
// fair hash misses in about 13 % and 78 % of runs; at 10,000, 10σ and
// 5.8σ.
func balanceSound(n, r int) (bool, float64) {
	p := 1 / float64(r)
	sigma := math.Sqrt(float64(n) * p * (1 - p))
	z := 0.1 * float64(n) * p / sigma
	return z >= 5, z
}

// checkBalance asserts balanceBound on each of stored, the counts of r
// replicas' primary caches of n objects, when balanceSound says a fair
// hash keeps it; it says so in the test's log either way.
func checkBalance(t *testing.T, label string, n int, stored []int) {
	t.Helper()
	r := len(stored)
	lo, hi := balanceBound(n, r)
	sound, z := balanceSound(n, r)
	if !sound {
		t.Logf("%s: caches %v of N = %d; ±10 %% of N/R (%.0f–%.0f) is %.1fσ of a fair hash's spread, under the 5σ that makes it a test: not asserted at this N (make shards asserts it at 10,000)", label, stored, n, lo, hi, z)
		return
	}
	for i, s := range stored {
		require.True(t, float64(s) >= lo && float64(s) <= hi,
			"%s: replica pod-%d caches %d of the %d Tiles, outside ±10 %% of N/R (%.0f–%.0f)", label, i, s, n, lo, hi)
	}
}

// replicaIDs returns the identities of r replicas, as the measurement
// names them.
func replicaIDs(r int) []string {
	out := make([]string, r)
	for i := range r {
		out[i] = fmt.Sprintf("pod-%d", i)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
