package informer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

// The figures below are the heap that Watches sharing one Registry hold
// per owned or related object, against the same Watches each on a
// Registry of its own, as every Watch was before the Registry: the Owns
// of three Controllers of one Client, and the Caches of two.
//
// Print them with
//
//	go test ./adapters/informer -run '^$' -bench 'BenchmarkRegistry(Memory|MixedOwns)' -benchtime 1x -count 3

// apiServers serves several resources, each as its apiServer does, and
// counts the watches of each.
type apiServers struct {
	servers map[string]*apiServer
	watches map[string]*atomic.Int64
}

func newAPIServers(servers ...*apiServer) apiServers {
	s := apiServers{servers: map[string]*apiServer{}, watches: map[string]*atomic.Int64{}}
	for _, one := range servers {
		s.servers[one.path], s.watches[one.path] = one, &atomic.Int64{}
	}
	return s
}

func (s apiServers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	one, ok := s.servers[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if r.URL.Query().Get("watch") == "true" {
		s.watches[r.URL.Path].Add(1)
	}
	one.ServeHTTP(w, r)
}

// registryCase is a set of Watches of Memcacheds, as the Controllers of
// one Client: each owns Deployments, or each caches ConfigMaps.
type registryCase struct {
	name    string
	watches int
	// related is true for Watches that cache ConfigMaps, and false for
	// ones that own Deployments.
	related bool
	// filtered is how many of the Watches, the first ones, own
	// Deployments through a filter: their metadata store keeps each
	// object's metadata as JSON for the filter to read.
	filtered int
}

var registryCases = []registryCase{
	{name: "owned/3-watches", watches: 3},
	{name: "related/2-caches", watches: 2, related: true},
}

// registryFigures is what measureRegistry finds.
type registryFigures struct {
	// heap is the heap every Watch's informers hold together, per owned
	// or related object.
	heap float64
	// watches is the number of watches of the owned or related
	// resource the API server served them.
	watches int64
}

// measureRegistry serves n Deployments, or ConfigMaps, and no Memcached,
// builds rc's Watches on one Registry when shared and on one each
// otherwise, then starts them, and returns the heap their informers hold per object: the
// live heap with every Watch synced, less the live heap once they are
// stopped and dropped. The primary informers, of no Memcached, add their
// fixed cost alone.
func measureRegistry(t testing.TB, rc registryCase, shared bool, n int) registryFigures {
	t.Helper()
	owned := &apiServer{
		path: "/apis/apps/v1/deployments", listKind: "PartialObjectMetadataList",
		itemKind: "PartialObjectMetadata", version: "meta.k8s.io/v1", items: make([][]byte, n),
	}
	encode := deploymentJSON
	if rc.related {
		owned.path, owned.listKind, owned.itemKind, owned.version = "/api/v1/configmaps", "ConfigMapList", "ConfigMap", "v1"
		encode = configMapJSON
	}
	for i := range n {
		owned.items[i] = encode(i)
	}
	primary := &apiServer{
		path: "/apis/cache.example.com/v1alpha1/memcacheds", listKind: "MemcachedList",
		itemKind: "Memcached", version: "cache.example.com/v1alpha1",
	}
	servers := newAPIServers(owned, primary)
	srv := httptest.NewServer(servers)
	defer srv.Close()
	config := &rest.Config{Host: srv.URL}
	meta, err := metadata.NewForConfigAndClient(config, srv.Client())
	require.NoError(t, err)
	wire, err := informer.NewDynamicClient(config)
	require.NoError(t, err)

	registries := make([]*informer.Registry, rc.watches)
	for i := range registries {
		if i == 0 || !shared {
			registries[i] = informer.NewRegistry(logr.Discard())
		} else {
			registries[i] = registries[0]
		}
	}
	keep := informer.Filter{Name: "labels", Keep: func(o, n metav1.Object) bool { return len(o.GetLabels()) != len(n.GetLabels()) }}
	added := make([]atomic.Int64, rc.watches)
	watches := make([]*informer.Watch, rc.watches)
	// Every Watch is built before any starts, as an App builds its
	// Controllers, so the first store of Deployments is of the form every
	// Owns asks for.
	for i := range watches {
		c := informer.WatchConfig{
			Dynamic: wire, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Logger: logr.Discard(), Registry: registries[i],
		}
		if rc.related {
			// Every ConfigMap is named by one Memcached, so each one
			// queues a key, as the handler counts.
			c.Related = []informer.RelatedConfig{{Resource: memoryConfigMaps, Map: func(obj metav1.Object) []ports.Key {
				return []ports.Key{{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
			}}}
		} else {
			c.Owns = []informer.OwnedConfig{{Resource: memoryDeployments}}
			if i < rc.filtered {
				c.Owns[0].Filters = []informer.Filter{keep}
			}
		}
		watches[i], err = informer.NewWatch(c)
		require.NoError(t, err)
	}
	for i, w := range watches {
		w.Start(t.Context(), func(ports.Event) { added[i].Add(1) })
	}
	for i, w := range watches {
		require.True(t, w.WaitForSync(t.Context()))
		require.Eventually(t, func() bool { return added[i].Load() == int64(n) }, time.Minute, time.Millisecond,
			"every object reaches Watch %d's handler", i)
	}
	figures := registryFigures{watches: servers.watches[owned.path].Load()}

	held := heapInUse()
	for _, w := range watches {
		w.Stop()
	}
	// Stopped, and no longer referenced, so the collection frees every
	// store.
	clear(watches)
	clear(registries)
	released := heapInUse()
	runtime.KeepAlive(wire)
	runtime.KeepAlive(meta)
	figures.heap = (float64(held) - float64(released)) / float64(n)
	return figures
}

// BenchmarkRegistryMemory reports the heap the Watches of one Client hold
// per owned or related object, in B/object, at 10,000 objects: three that
// each own Deployments, and two that each cache ConfigMaps with no
// transform, when they share one Registry and when each has one of its
// own. watches is the number of watches of Deployments, or ConfigMaps,
// the API server served them. Each iteration lists and caches every
// object, so ns/op is the time to fill the caches.
func BenchmarkRegistryMemory(b *testing.B) {
	for _, rc := range registryCases {
		for _, shared := range []bool{true, false} {
			registry := "separate"
			if shared {
				registry = "shared"
			}
			const n = 10_000
			b.Run(fmt.Sprintf("%s/%s/%d", rc.name, registry, n), func(b *testing.B) {
				var f registryFigures
				for b.Loop() {
					f = measureRegistry(b, rc, shared, n)
				}
				b.ReportMetric(f.heap, "B/object")
				b.ReportMetric(float64(f.watches), "watches")
			})
		}
	}
}

// BenchmarkRegistryMixedOwns reports the heap, in B/object at 10,000
// Deployments, of three Watches on one Registry that each own
// Deployments, none, the first or all three through a filter: a filtered
// Owns makes the metadata store it shares keep each object's metadata as
// JSON, which the unfiltered Owns of BenchmarkRegistryMemory never pays
// for. watches is the number of watches of Deployments the API server
// served them: one store for the three, filtered or not.
func BenchmarkRegistryMixedOwns(b *testing.B) {
	for _, filtered := range []int{0, 1, 3} {
		const n = 10_000
		rc := registryCase{watches: 3, filtered: filtered}
		b.Run(fmt.Sprintf("filtered-%d-of-3/%d", filtered, n), func(b *testing.B) {
			var f registryFigures
			for b.Loop() {
				f = measureRegistry(b, rc, true, n)
			}
			b.ReportMetric(f.heap, "B/object")
			b.ReportMetric(float64(f.watches), "watches")
		})
	}
}
