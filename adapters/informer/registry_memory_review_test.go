package informer_test

// Hostile review of the informer registry (issue 40, merge cd26e95): the
// heap of a metadata store that Owns with and without filters share, now
// that it keeps every object's metadata as JSON for the filtered one,
// which BenchmarkRegistryMemory never measures (its Owns have no
// filters). Run on 038f976 and cd26e95 with
//
//	go test ./adapters/informer -run '^$' -bench 'BenchmarkReviewMixedOwns' -benchtime 1x -count 3

import (
	"fmt"
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

// BenchmarkReviewMixedOwns reports the heap, per Deployment at 10,000,
// of three Watches on one Registry that each own Deployments, filtered
// of them the first `filtered`.
func BenchmarkReviewMixedOwns(b *testing.B) {
	for _, filtered := range []int{0, 1, 3} {
		b.Run(fmt.Sprintf("filtered-%d-of-3/10000", filtered), func(b *testing.B) {
			var heap float64
			var watches int64
			for b.Loop() {
				heap, watches = measureMixedOwns(b, filtered, 10_000)
			}
			b.ReportMetric(heap, "B/object")
			b.ReportMetric(float64(watches), "watches")
		})
	}
}

func measureMixedOwns(t testing.TB, filtered, n int) (float64, int64) {
	owned := &apiServer{
		path: "/apis/apps/v1/deployments", listKind: "PartialObjectMetadataList",
		itemKind: "PartialObjectMetadata", version: "meta.k8s.io/v1", items: make([][]byte, n),
	}
	for i := range n {
		owned.items[i] = deploymentJSON(i)
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
	registry := informer.NewRegistry(logr.Discard())
	keep := informer.Filter{Name: "labels", Keep: func(o, n metav1.Object) bool { return len(o.GetLabels()) != len(n.GetLabels()) }}
	added := make([]atomic.Int64, 3)
	watches := make([]*informer.Watch, 3)
	for i := range watches {
		oc := informer.OwnedConfig{Resource: memoryDeployments}
		if i < filtered {
			oc.Filters = []informer.Filter{keep}
		}
		watches[i], err = informer.NewWatch(informer.WatchConfig{
			Dynamic: wire, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Owns: []informer.OwnedConfig{oc}, Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
	}
	for i, w := range watches {
		w.Start(t.Context(), func(ports.Event) { added[i].Add(1) })
	}
	for i, w := range watches {
		require.True(t, w.WaitForSync(t.Context()))
		require.Eventually(t, func() bool { return added[i].Load() == int64(n) }, time.Minute, time.Millisecond)
	}
	count := servers.watches[owned.path].Load()
	held := heapInUse()
	for _, w := range watches {
		w.Stop()
	}
	clear(watches)
	registry = nil
	released := heapInUse()
	runtime.KeepAlive(wire)
	runtime.KeepAlive(meta)
	return (float64(held) - float64(released)) / float64(n), count
}
