package informer_test

import (
	"bytes"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/informer"
)

// gcWork is what a full collection does with the heap as it is.
type gcWork struct {
	// cpu is the CPU it spends, the mean of several collections: a
	// figure the machine's load moves.
	cpu time.Duration
	// scanned is the bytes of heap objects it scans for pointers, and
	// objects the live heap objects: figures no load moves.
	scanned, objects uint64
}

// measureWork returns what a full collection does, over k of them.
func measureWork(k int) gcWork {
	samples := []metrics.Sample{
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/gc/scan/heap:bytes"},
		{Name: "/gc/heap/objects:objects"},
	}
	runtime.GC()
	metrics.Read(samples)
	before := samples[0].Value.Float64()
	for range k {
		runtime.GC()
	}
	metrics.Read(samples)
	return gcWork{
		cpu:     time.Duration((samples[0].Value.Float64() - before) * float64(time.Second) / float64(k)),
		scanned: samples[1].Value.Uint64(),
		objects: samples[2].Value.Uint64(),
	}
}

// measureGC fills v's informer with n objects, as measureCache does, and
// returns the CPU a full collection spends on its cache, per object: a
// collection's CPU with the synced informer, less a collection's once it
// is stopped and dropped, over n; and the heap it holds, as measureCache
// finds it.
func measureGC(t testing.TB, v cacheVariant, n int) gcFigures {
	t.Helper()
	s := &apiServer{
		path: "/apis/cache.example.com/v1alpha1/memcacheds", listKind: "MemcachedList",
		itemKind: "Memcached", version: "cache.example.com/v1alpha1", items: make([][]byte, n),
	}
	encode := memcachedJSON
	if v.owned {
		s.path, s.listKind, s.itemKind, s.version = "/apis/apps/v1/deployments", "PartialObjectMetadataList", "PartialObjectMetadata", "meta.k8s.io/v1"
		encode = deploymentJSON
	}
	for i := range n {
		s.items[i] = encode(i)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	config := &rest.Config{Host: srv.URL}
	dyn, err := dynamic.NewForConfigAndClient(config, srv.Client())
	require.NoError(t, err)
	meta, err := metadata.NewForConfigAndClient(config, srv.Client())
	require.NoError(t, err)
	wire, err := informer.NewDynamicClient(config)
	require.NoError(t, err)

	var added atomic.Int64
	inf := v.build(t, testClients{dynamic: dyn, wire: wire, metadata: meta}, func() { added.Add(1) })
	r := informer.Start(t.Context(), inf)
	require.True(t, r.WaitForSync(t.Context()))
	require.Eventually(t, func() bool { return added.Load() == int64(n) }, time.Minute, time.Millisecond)

	const k = 20
	held, heldHeap := measureWork(k), heapInUse()
	if *heapProfile != "" {
		writeHeapProfile(t, fmt.Sprintf("%s.%s", *heapProfile, strings.ReplaceAll(v.name, "/", "-")))
	}
	runtime.KeepAlive(inf)
	r.Stop()
	released, releasedHeap := measureWork(k), heapInUse()
	runtime.KeepAlive(dyn)
	runtime.KeepAlive(wire)
	runtime.KeepAlive(meta)
	per := func(held, released float64) float64 { return (held - released) / float64(n) }
	return gcFigures{
		gc:      per(float64(held.cpu), float64(released.cpu)),
		scanned: per(float64(held.scanned), float64(released.scanned)),
		objects: per(float64(held.objects), float64(released.objects)),
		heap:    per(float64(heldHeap), float64(releasedHeap)),
	}
}

// heapProfile names the files BenchmarkCacheGC writes the heap's profile
// to, with each cache synced, for pprof's inuse_space: run it with
// -test.memprofilerate=1 to record every allocation.
var heapProfile = flag.String("cache.heapprofile", "", "write the heap's profile with each cache synced to this file, suffixed with the cache's name")

// writeHeapProfile writes the heap's profile to path.
func writeHeapProfile(t testing.TB, path string) {
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("heap").WriteTo(&buf, 0))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
}

// gcFigures is what measureGC finds, per cached object.
type gcFigures struct {
	// gc is the CPU a full collection spends on the object, in ns,
	// scanned the bytes it scans for pointers, objects the heap objects
	// the object takes, and heap the heap it holds.
	gc, scanned, objects, heap float64
}

// BenchmarkCacheGC reports the CPU a full collection spends per cached
// object, GC-ns/object, the bytes it scans for pointers, scan-B/object,
// the heap objects, heap-objects/object, and the heap, B/object, of
// loam's primary and owned caches at 5,000 objects: what the cache's
// pointers cost the collector.
//
//	go test -run '^$' -bench CacheGC -benchtime 1x -count 3 ./adapters/informer/
func BenchmarkCacheGC(b *testing.B) {
	const n = 5_000
	for _, v := range cacheVariants {
		if v.name != "primary/loam" && v.name != "owned/loam" {
			continue
		}
		b.Run(fmt.Sprintf("%s/%d", v.name, n), func(b *testing.B) {
			var f gcFigures
			for b.Loop() {
				f = measureGC(b, v, n)
			}
			b.ReportMetric(f.gc, "GC-ns/object")
			b.ReportMetric(f.scanned, "scan-B/object")
			b.ReportMetric(f.objects, "heap-objects/object")
			b.ReportMetric(f.heap, "B/object")
		})
	}
}
