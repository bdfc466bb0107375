package sharded

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

var (
	flagN      = flag.Int("sharded.n", 200, "objects the sharding measurement creates (make shards: 10000)")
	flagW      = flag.Int("sharded.w", 4, "workers of each replica in the sharding measurement")
	flagPause  = flag.Duration("sharded.pause", 50*time.Millisecond, "what each reconcile of the throughput runs waits, as a call to an outside system would")
	flagRepeat = flag.Int("sharded.repeat", 1, "how many times the sharding measurement runs each configuration, interleaved")
	flagTimed  = flag.Bool("sharded.throughput", true, "whether the sharding measurement runs its throughput rows too, not only its cost rows")
)

// measureShards is the measurement's number of shards.
const measureShards = 8

// run is one configuration of the measurement: replicas replicas of
// workers workers each, sharded or not, whose reconciles wait pause.
type run struct {
	replicas, workers int
	sharded           bool
	pause             time.Duration
}

func (r run) String() string {
	mode := "leader election"
	if r.sharded {
		mode = fmt.Sprintf("%d shards", measureShards)
	}
	return fmt.Sprintf("%d × %d workers, %s, reconcile %v", r.replicas, r.workers, mode, r.pause)
}

// result is what one run measured: how long the N objects took to be
// reconciled, from the first create, and, for each replica, how many
// objects and events its watches carried and, in a cost run, how many
// objects its primary cache holds once they are.
type result struct {
	took    time.Duration
	objects []int
	events  []int
	cached  []int
}

// TestShardedMeasure measures what sharding changes per replica, with the
// gate on, for docs/performance.md: R = 1, 2 and 4 replicas of a Tile
// controller whose reconciles take no time, N objects created once the
// shards have spread, each replica's watches counted (the objects they
// carried are what its primary cache holds), and what each replica's
// primary cache holds once every object is reconciled, counted in the
// cache: exactly the objects of its shards, and, for R = 2 and 4, within
// ±10 % of N/R (asserted where N makes that bound a test of the hash:
// checkBalance); and, with reconciles that wait -sharded.pause, the time N
// objects created first take to converge from a cold start on R sharded
// replicas of W workers, on one replica of R×W workers (the baseline
// sharding must not lose to) and of W, both leader-elected
// (-sharded.throughput=false leaves these out). The runs are interleaved,
// -sharded.repeat times; each row is the median and the spread. `make
// test` runs it at N = 200, once; `make shards` at 10,000, three times.
func TestShardedMeasure(t *testing.T) {
	n, w := *flagN, *flagW
	c, k, d := tileCluster(t)
	runs := []run{{1, w, true, 0}, {2, w, true, 0}, {4, w, true, 0}}
	if *flagTimed {
		runs = append(runs,
			run{1, w, false, *flagPause}, run{2, w, true, *flagPause}, run{1, 2 * w, false, *flagPause},
			run{4, w, true, *flagPause}, run{1, 4 * w, false, *flagPause})
	}
	results := make([][]result, len(runs))
	for range *flagRepeat {
		for i, r := range runs {
			ns := c.Namespace(t)
			shards := 0
			if r.sharded {
				shards = measureShards
			}
			// A throughput run times a cold start over N objects created
			// first: startup, the Leases and the first list included, as
			// for leader election. A cost run counts what the watches carry
			// once the shards have spread, so objects come after.
			cold := r.pause > 0
			var start time.Time
			var converged <-chan time.Time
			if cold {
				createTiles(t, d, ns, n)
				converged = watchConverged(t, d, ns, n)
				start = time.Now()
			}
			var replicas []tileReplica
			var apps []wait.Watched
			// A cost run counts what each replica's primary cache holds.
			counts := map[string]cacheCount{}
			ids := replicaIDs(r.replicas)
			for _, id := range ids {
				var parts []kube.Part
				if !cold {
					counts[id] = newCacheCount()
					parts = append(parts, counts[id].part())
				}
				rep := startTiles(t, c, ns, id, shards, r.workers, r.pause, parts...)
				replicas = append(replicas, rep)
				apps = append(apps, rep.app)
			}
			var uids map[string]string
			if !cold {
				if r.sharded {
					wait.For(t, 2*time.Minute, func() bool {
						per := map[string]int{}
						held := tileHolders(t, k, ns)
						for _, id := range held {
							per[id]++
						}
						return len(held) == measureShards && len(per) == min(r.replicas, measureShards) &&
							!slices.ContainsFunc(mapValues(per), func(v int) bool { return v > (measureShards+r.replicas-1)/r.replicas })
					}, r.String()+": the shards never spread", apps...)
				}
				for _, rep := range replicas {
					rep.counter.reset()
				}
				converged = watchConverged(t, d, ns, n)
				start = time.Now()
				uids = createTiles(t, d, ns, n)
			}
			var done time.Time
			select {
			case done = <-converged:
			case <-time.After(30 * time.Minute):
				t.Fatalf("%s: the Tiles did not converge in 30 minutes", r)
			}
			res := result{took: done.Sub(start)}
			for _, rep := range replicas {
				counted := rep.counter.counted()
				events := 0
				for _, e := range counted {
					events += e
				}
				res.objects = append(res.objects, len(counted))
				res.events = append(res.events, events)
			}
			if !cold && r.sharded {
				res.cached = checkCaches(t, k, ns, ids, counts, uids, apps)
				checkBalance(t, r.String(), n, res.cached)
			}
			for _, rep := range replicas {
				require.Equal(t, 0, rep.stop(), "%s: a replica exits 0 on SIGTERM", r)
			}
			results[i] = append(results[i], res)
		}
	}

	t.Logf("figure: N = %d, W = %d, %d runs of each, interleaved; median (min–max)", n, w, *flagRepeat)
	t.Logf("figure: | run | per replica: objects its watches carried | per replica: events | converged in |")
	t.Logf("figure: | --- | --- | --- | --- |")
	for i, r := range runs {
		var took []time.Duration
		var objects, events []int
		for _, res := range results[i] {
			took = append(took, res.took)
			objects = append(objects, res.objects...)
			events = append(events, res.events...)
		}
		t.Logf("figure: | %s | %s | %s | %s |", r, spreadInts(objects), spreadInts(events), spreadDurations(took))
	}

	t.Logf("figure: each replica's primary cache once the N = %d Tiles are reconciled, counted in the cache; every run", n)
	t.Logf("figure: | replicas | N/R | ±10 %% | per replica: objects in its primary cache, pod-0, pod-1, … |")
	t.Logf("figure: | --- | ---: | ---: | --- |")
	for i, r := range runs {
		if r.pause > 0 || !r.sharded {
			continue
		}
		lo, hi := balanceBound(n, r.replicas)
		for _, res := range results[i] {
			t.Logf("figure: | %d × %d shards | %d | %.0f–%.0f | %v |", r.replicas, measureShards, n/r.replicas, lo, hi, res.cached)
		}
	}
}

func mapValues(m map[string]int) []int {
	out := make([]int, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// spreadInts returns the median of vs, and their range.
func spreadInts(vs []int) string {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s) == 0 {
		return "-"
	}
	if s[0] == s[len(s)-1] {
		return fmt.Sprint(s[0])
	}
	return fmt.Sprintf("%d (%d–%d)", s[len(s)/2], s[0], s[len(s)-1])
}

// spreadDurations returns the median of ds, and their range.
func spreadDurations(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return "-"
	}
	round := func(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }
	if len(s) == 1 {
		return round(s[0])
	}
	return strings.Join([]string{round(s[len(s)/2]), " (", round(s[0]), "–", round(s[len(s)-1]), ")"}, "")
}

// watchConverged watches the Tiles of ns and returns a channel that
// receives the moment every one of n has a status that observed its
// generation: a watch, so that waiting doesn't list thousands of objects
// again and again beside what is measured. A watch the API server ends
// (its timeout, or a consumer too slow on a loaded machine) is opened
// again from the last resourceVersion seen, and one too old to resume
// from lists once and goes on from the list.
func watchConverged(t *testing.T, d dynamic.Interface, ns string, n int) <-chan time.Time {
	t.Helper()
	ctx := t.Context()
	tiles := d.Resource(tiles.GVR()).Namespace(ns)
	w, err := tiles.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	out := make(chan time.Time, 1)
	go func() {
		done := map[string]bool{}
		seen := func(u *unstructured.Unstructured) {
			if g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); g == u.GetGeneration() {
				done[u.GetName()] = true
			}
		}
		rv := ""
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					rv = "" // too old to resume from: list again
					break
				}
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Deleted {
					continue
				}
				rv = u.GetResourceVersion()
				seen(u)
				if len(done) == n {
					w.Stop()
					out <- time.Now()
					return
				}
			}
			w.Stop()
			if rv == "" {
				list, err := tiles.List(ctx, metav1.ListOptions{})
				if err != nil {
					return // the test has ended
				}
				for i := range list.Items {
					seen(&list.Items[i])
				}
				rv = list.GetResourceVersion()
			}
			if w, err = tiles.Watch(ctx, metav1.ListOptions{ResourceVersion: rv}); err != nil {
				return // the test has ended
			}
		}
	}()
	return out
}
