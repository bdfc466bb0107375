package sharded

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/controllerapp"
	"github.com/loam-dev/loam/kubetest/wait"
)

// A Tile is what the sharded controllers reconcile: a number in its spec,
// and a status saying which generation the controller last saw.
type tileSpec struct {
	Value int64 `json:"value"`
}

type tileStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

var tiles = kube.Resource[tileSpec, tileStatus]{
	Group: "sharded.kubetest.loam.dev", Version: "v1", Kind: "Tile", Plural: "tiles", Scope: kube.Namespaced,
}

const tileController = "tile-controller"

// watchCounter counts, from the watch streams of Tiles a replica's
// requests open through a Proxy, the uids of the objects whose events
// reached the replica.
type watchCounter struct {
	mu   sync.Mutex
	uids map[string]int
	// lists counts the replica's informers' lists of Tiles by their
	// shardSelector: a LIST, or a watch that asks for initial events
	// (client-go's watch-list), which lists as it opens. The start-up
	// check's lists of one object aren't counted.
	lists map[string]int
}

func newWatchCounter() *watchCounter {
	return &watchCounter{uids: map[string]int{}, lists: map[string]int{}}
}

// inspect passes every request on, counting each list of Tiles and
// reading the events of each watch as the API server streams them.
func (c *watchCounter) inspect(rw http.ResponseWriter, r *http.Request, next http.Handler) {
	q := r.URL.Query()
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/"+tiles.Plural) {
		next.ServeHTTP(rw, r)
		return
	}
	if kubetest.Lists(r) && q.Get("limit") != "1" {
		c.listed(q.Get("shardSelector"))
	}
	if q.Get("watch") != "true" {
		next.ServeHTTP(rw, r)
		return
	}
	next.ServeHTTP(&eventReader{ResponseWriter: rw, seen: c.seen}, r)
}

func (c *watchCounter) listed(selector string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lists[selector]++
}

// listedSince returns the lists counted since the last reset, by
// selector.
func (c *watchCounter) listedSince() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.lists)
}

func (c *watchCounter) seen(uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uids[uid]++
}

// reset forgets what was counted.
func (c *watchCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uids = map[string]int{}
	c.lists = map[string]int{}
}

func (c *watchCounter) counted() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.uids)
}

// eventReader is a watch's ResponseWriter that decodes the JSON events
// the API server writes, one a line, and tells seen each object's uid.
type eventReader struct {
	http.ResponseWriter
	buf  []byte
	seen func(uid string)
}

func (e *eventReader) Write(p []byte) (int, error) {
	e.buf = append(e.buf, p...)
	for {
		i := bytes.IndexByte(e.buf, '\n')
		if i < 0 {
			break
		}
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					UID string `json:"uid"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if json.Unmarshal(e.buf[:i], &ev) == nil && ev.Type != "BOOKMARK" && ev.Object.Metadata.UID != "" {
			e.seen(ev.Object.Metadata.UID)
		}
		e.buf = e.buf[i+1:]
	}
	return e.ResponseWriter.Write(p)
}

func (e *eventReader) Flush() {
	if f, ok := e.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestShardedWatchesCarryOnlyTheirShards runs two replicas of a Tile
// controller with 4 shards, each through a proxy that reads its watches,
// with the gate on. Once they hold two shards each, 200 Tiles are created:
// every Tile is reconciled, and the events of each reached exactly one
// replica, the one holding its shard: the API server sends each replica
// only its shards' objects.
func TestShardedWatchesCarryOnlyTheirShards(t *testing.T) {
	const objects, shards = 200, 4
	c, k, d := tileCluster(t)
	ns := c.Namespace(t)

	counters := map[string]*watchCounter{}
	var apps []wait.Watched
	for _, id := range []string{"pod-0", "pod-1"} {
		r := startTiles(t, c, ns, id, shards, 2, 0)
		counters[id] = r.counter
		apps = append(apps, r.app)
	}

	holders := func() map[int]string { return tileHolders(t, k, ns) }
	var held map[int]string
	wait.For(t, time.Minute, func() bool {
		held = holders()
		per := map[string]int{}
		for _, id := range held {
			per[id]++
		}
		return len(held) == shards && per["pod-0"] == 2 && per["pod-1"] == 2
	}, "the shards never spread over both replicas", apps...)
	for _, counter := range counters {
		counter.reset()
	}

	uids := createTiles(t, d, ns, objects)
	waitReconciled(t, d, ns, objects, time.Minute, apps)
	require.Equal(t, held, holders(), "the shards stayed where they were")

	for uid, name := range uids {
		owner := held[shard.Of(uid, shards)]
		for id, counter := range counters {
			n := counter.counted()[uid]
			if id == owner {
				// Its creation, and the status write that reconciled it.
				require.Positive(t, n, "%s: its shard is %s's, whose watch never carried it", name, owner)
			} else {
				require.Zero(t, n, "%s: its shard is %s's, yet %s's watch carried it %d times", name, owner, id, n)
			}
		}
	}
	for id, counter := range counters {
		t.Logf("figure: | replica %s | shards %v | objects whose events its watch carried | %d of %d |", id, held, len(counter.counted()), objects)
	}
}

// TestShardedRebalanceListsOnlyTheShardsThatMove: one replica holds all
// four shards, each listed and watched on its own; a second replica joins
// and takes two. The first lists nothing again (the shards it keeps go on
// watching), the second lists exactly the two it took, each once, and
// every Tile, the moved ones included, is reconciled by its new holder.
func TestShardedRebalanceListsOnlyTheShardsThatMove(t *testing.T) {
	const objects, shards = 100, 4
	c, k, d := tileCluster(t)
	ns := c.Namespace(t)
	first := startTiles(t, c, ns, "pod-0", shards, 2, 0)
	apps := []wait.Watched{first.app}
	wait.For(t, time.Minute, func() bool { return len(tileHolders(t, k, ns)) == shards }, "pod-0 never took every shard", apps...)
	uids := createTiles(t, d, ns, objects)
	waitReconciled(t, d, ns, objects, time.Minute, apps)
	selectors := map[string]int{}
	for i := range shards {
		selectors[shard.Selector([]int{i}, shards)] = i
	}
	for sel := range first.counter.listedSince() {
		require.Contains(t, selectors, sel, "pod-0 listed with a selector of no one shard")
	}
	first.counter.reset()

	second := startTiles(t, c, ns, "pod-1", shards, 2, 0)
	apps = append(apps, second.app)
	var held map[int]string
	wait.For(t, time.Minute, func() bool {
		held = tileHolders(t, k, ns)
		per := map[string]int{}
		for _, id := range held {
			per[id]++
		}
		return per["pod-0"] == 2 && per["pod-1"] == 2
	}, "the shards never spread over both replicas", apps...)

	// Every Tile moved to pod-1 is reconciled there: bump each one's
	// generation and wait for its status.
	for _, name := range uids {
		patch := []byte(`{"spec":{"value":-1}}`)
		_, err := d.Resource(tiles.GVR()).Namespace(ns).Patch(t.Context(), name, "application/merge-patch+json", patch, metav1.PatchOptions{})
		require.NoError(t, err)
	}
	waitReconciled(t, d, ns, objects, time.Minute, apps)
	require.Equal(t, held, tileHolders(t, k, ns), "the shards stayed where they were")

	want := map[string]int{}
	for i, id := range held {
		if id == "pod-1" {
			want[shard.Selector([]int{i}, shards)] = 1
		}
	}
	require.Empty(t, first.counter.listedSince(), "pod-0 listed again, though it only gave shards up")
	got := second.counter.listedSince()
	require.Equal(t, want, got, "pod-1 lists each shard it took once, and nothing else")
	t.Logf("figure: | pod-0 lists after the rebalance | 0 | pod-1 lists | %v |", got)

	// pod-1's queue counted its keys by their shards: every Tile it took
	// was queued under its shard, and no key of pod-0's shards was.
	adds := queueAdds(t, second.telemetry)
	for i := range shards {
		key := fmt.Sprint(i)
		if held[i] == "pod-1" {
			require.Positive(t, adds[key], "shard %d: pod-1's queue counted none of its keys", i)
		} else {
			require.Zero(t, adds[key], "shard %d is pod-0's, yet pod-1 queued its keys", i)
		}
	}
	t.Logf("figure: | pod-1 queue.adds by shard | %v |", adds)
}

// queueAdds returns the queue.adds a replica recorded, by the
// loam.kube.controller.shard of each data point.
func queueAdds(t *testing.T, tel *apptest.Telemetry) map[string]int64 {
	t.Helper()
	adds, err := tel.TotalBy(t.Context(), telemetry.QueueAddsName, telemetry.ShardKey)
	require.NoError(t, err)
	return adds
}

// tileReplica is one replica of the Tile controller, and what its watches
// carried.
type tileReplica struct {
	app       wait.Watched
	telemetry *apptest.Telemetry
	stop      func() int
	counter   *watchCounter
}

// tileLeases sets the Leases' timings of a Tile replica: renewed within
// 10 s, as a replica starved of CPU beside a cold build still manages
// (with 3 s and 2 s, such a replica lost its membership Lease and exited
// 1 mid-measure), and tried every 500 ms, so a shard given up is taken at
// once. No test here waits out a Lease: every replica releases its own.
func tileLeases(s *kube.Settings) {
	s.LeaderElection.LeaseDuration, s.LeaderElection.RenewDeadline, s.LeaderElection.RetryPeriod = 15*time.Second, 10*time.Second, 500*time.Millisecond
}

// startTiles runs replica id of the Tile controller in ns, with shards
// shards (0 for leader election) and workers workers, and parts, through a
// proxy that counts what its watches carry. Its Reconciler waits pause, as
// a call to an outside system would, and writes the status.
func startTiles(t *testing.T, c *kubetest.Cluster, ns, id string, shards, workers int, pause time.Duration, parts ...kube.Part) tileReplica {
	t.Helper()
	counter := newWatchCounter()
	conn := c.Proxy(t, counter.inspect).Connection()
	conn.Token = c.Connection().Token
	s := kube.DefaultSettings()
	s.Name, s.Namespace, s.Shards, s.Workers = tileController, ns, shards, workers
	s.LeaderElection.Namespace, s.LeaderElection.Identity = ns, id
	tileLeases(&s)
	a, _ := controllerapp.Start(t, conn, func(setup *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return kube.NewController(setup, client, s, tiles, kube.ReconcilerFunc[tileSpec, tileStatus](
			func(ctx context.Context, o kube.Object[tileSpec, tileStatus]) (kube.Result[tileStatus], error) {
				if pause > 0 {
					select {
					case <-ctx.Done():
						return kube.Result[tileStatus]{}, ctx.Err()
					case <-time.After(pause):
					}
				}
				return kube.Result[tileStatus]{Status: &tileStatus{ObservedGeneration: o.Generation}}, nil
			}), parts...)
	}, app.WithHost(app.Host{Network: &apptest.Switch{}}))
	return tileReplica{app: wait.App(a), telemetry: a.Telemetry(), stop: a.Stop, counter: counter}
}

// tileHolders returns the identity holding each shard's Lease of the Tile
// controller in ns; a shard nobody holds is missing.
func tileHolders(t *testing.T, k kubernetes.Interface, ns string) map[int]string {
	t.Helper()
	list, err := k.CoordinationV1().Leases(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "loam.dev/controller=" + tileController})
	require.NoError(t, err)
	out := map[int]string{}
	for _, l := range list.Items {
		var i int
		if _, err := fmt.Sscan(l.Labels["loam.dev/shard"], &i); err != nil {
			continue
		}
		if id, _, _ := strings.Cut(ptr.Deref(l.Spec.HolderIdentity, ""), "_"); id != "" {
			out[i] = id
		}
	}
	return out
}

// createTiles creates n Tiles in ns, from 16 goroutines, and returns
// their names by uid.
func createTiles(t *testing.T, d dynamic.Interface, ns string, n int) map[string]string {
	t.Helper()
	var mu sync.Mutex
	uids := map[string]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": tiles.Group + "/" + tiles.Version, "kind": tiles.Kind,
					"metadata": map[string]any{"namespace": ns, "name": fmt.Sprintf("t%05d", i)},
					"spec":     map[string]any{"value": int64(i)},
				}}
				created, err := d.Resource(tiles.GVR()).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				uids[string(created.GetUID())] = created.GetName()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return uids
}

// waitReconciled waits until every one of the n Tiles of ns has a status
// that observed its generation, and returns when they did.
func waitReconciled(t *testing.T, d dynamic.Interface, ns string, n int, within time.Duration, apps []wait.Watched) time.Time {
	t.Helper()
	return wait.For(t, within, func() bool {
		list, err := d.Resource(tiles.GVR()).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, u := range list.Items {
			if g, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); g != u.GetGeneration() {
				return false
			}
		}
		return len(list.Items) == n
	}, "not every Tile was reconciled", apps...)
}

// tileCluster returns the package's cluster with the Tile CRD installed,
// and the test's clients of it.
func tileCluster(t *testing.T) (*kubetest.Cluster, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	c := cluster.Cluster(t)
	crd, err := tiles.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	k, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return c, k, d
}
