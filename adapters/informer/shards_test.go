package informer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// shardingClient is a dynamic client whose lists echo their shard
// selector in metadata.shardInfo, as an API server that serves sharded
// list and watch does. It sends every object all the same, as one of an
// upgrade's API servers that doesn't might, and records the selector of
// each list and watch of a selector.
type shardingClient struct {
	dynamic.Interface
	mu    sync.Mutex
	calls []string
	// hold, when not nil, holds each list of the resource of a selector
	// until it is closed.
	hold chan struct{}
}

// IsWatchListSemanticsUnSupported tells client-go's reflector to list and
// then watch: the fake's watches send no initial events.
func (c *shardingClient) IsWatchListSemanticsUnSupported() bool { return true }

func (c *shardingClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return shardingResource{NamespaceableResourceInterface: c.Interface.Resource(gvr), c: c, resource: gvr.Resource}
}

func (c *shardingClient) record(verb, resource, selector string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, verb+" "+resource+" "+selector)
}

// taken returns the lists and watches of a selector since the last take.
func (c *shardingClient) taken() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

type shardingResource struct {
	dynamic.NamespaceableResourceInterface
	c        *shardingClient
	resource string
}

func (r shardingResource) Namespace(ns string) dynamic.ResourceInterface {
	return shardingNamespace{ResourceInterface: r.NamespaceableResourceInterface.Namespace(ns), c: r.c, resource: r.resource}
}

type shardingNamespace struct {
	dynamic.ResourceInterface
	c        *shardingClient
	resource string
}

func (r shardingNamespace) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	if r.c.hold != nil && opts.ShardSelector != "" && r.resource != "leases" {
		select {
		case <-r.c.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	l, err := r.ResourceInterface.List(ctx, opts)
	if err != nil || opts.ShardSelector == "" {
		return l, err
	}
	r.c.record("list", r.resource, opts.ShardSelector)
	err = unstructured.SetNestedField(l.Object, opts.ShardSelector, "metadata", "shardInfo", "selector")
	return l, err
}

func (r shardingNamespace) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.ShardSelector != "" {
		r.c.record("watch", r.resource, opts.ShardSelector)
	}
	return r.ResourceInterface.Watch(ctx, opts)
}

// nameIn returns a name whose object (of uid name-uid, as object makes
// it) is in shard s of count.
func nameIn(prefix string, s, count int) string {
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if shard.Of(name+"-uid", count) == s {
			return name
		}
	}
}

// shardedWatch returns a Watch of two shards over client, with Memcacheds
// zero and one, one of each shard, and a Deployment owned by each, checked
// and started, holding no shard yet.
func shardedWatch(t *testing.T, client dynamic.Interface, queued *keys) (*informer.Watch, *metadatafake.FakeMetadataClient) {
	t.Helper()
	zero, one := nameIn("m", 0, 2), nameIn("m", 1, 2)
	meta := metadatafake.NewSimpleMetadataClient(metadataScheme(),
		deployment("ns", "d0", ref("cache.example.com/v1alpha1", "Memcached", zero, true)),
		deployment("ns", "d1", ref("cache.example.com/v1alpha1", "Memcached", one, true)))
	w, err := informer.NewWatch(informer.WatchConfig{
		Dynamic: client, Metadata: meta, Resource: memcacheds, Owner: memcached,
		Owns:   []informer.OwnedConfig{{Resource: deployments}},
		Shards: 2, ShardsNamespace: "leases", Logger: logr.Discard(),
	})
	require.NoError(t, err)
	require.NoError(t, w.Check(t.Context()))
	startWatch(t, w, queued)
	return w, meta
}

// changed returns u at resourceVersion rv, as the API server would
// change it.
func changed(u *unstructured.Unstructured, rv string) *unstructured.Unstructured {
	u.SetResourceVersion(rv)
	return u
}

// taken returns the events notified since the last take.
func (k *keys) taken() []ports.Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.events
	k.events = nil
	return out
}

var leases = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

func memcachedClient(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{memcacheds: "MemcachedList", leases: "LeaseList"}, objects...)
}

// TestWatch_sharded_by_the_server_holds_each_shard_in_a_cache_of_its_own:
// with an API server that serves sharded watches, a held shard has its
// own list and watch, and its own cache of its objects alone, even when
// the server sends others; releasing it drops that cache and leaves the
// other shard's watch alone; an owned object's change is notified only
// for an owner of a held shard.
func TestWatch_sharded_by_the_server_holds_each_shard_in_a_cache_of_its_own(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		zero, one := nameIn("m", 0, 2), nameIn("m", 1, 2)
		fake := memcachedClient(versioned(object("ns", zero, nil)), versioned(object("ns", one, nil)))
		client := &shardingClient{Interface: fake}
		var queued keys
		w, _ := shardedWatch(t, client, &queued)
		sel0, sel1 := shard.Selector([]int{0}, 2), shard.Selector([]int{1}, 2)
		require.Equal(t, []string{"list leases " + sel0}, client.taken(), "Check's probe, and no informer of the resource until a shard is held")
		require.Empty(t, queued.take(t), "the owned objects' owners are in no held shard")
		_, found, err := w.Get(ports.Key{Namespace: "ns", Name: zero})
		require.NoError(t, err)
		require.False(t, found)

		w.Hold(0)
		synctest.Wait()
		require.Equal(t, []string{"list memcacheds " + sel0, "watch memcacheds " + sel0}, client.taken())
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: zero}}, queued.take(t), "shard 0's objects alone, as initial events")
		_, found, err = w.Get(ports.Key{Namespace: "ns", Name: zero})
		require.NoError(t, err)
		require.True(t, found)
		_, found, err = w.Get(ports.Key{Namespace: "ns", Name: one})
		require.NoError(t, err)
		require.False(t, found, "the server sent it, and the shard's cache dropped it")
		require.True(t, w.Primary().Synced())

		w.Hold(1)
		synctest.Wait()
		require.Equal(t, []string{"list memcacheds " + sel1, "watch memcacheds " + sel1}, client.taken())
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: one}}, queued.take(t))

		w.Release(1)
		synctest.Wait()
		require.Empty(t, client.taken(), "shard 0's watch carries on")
		_, found, err = w.Get(ports.Key{Namespace: "ns", Name: one})
		require.NoError(t, err)
		require.False(t, found, "shard 1's cache is gone")

		// Changes reach the replica for shard 0 alone.
		require.NoError(t, fake.Tracker().Update(memcacheds, changed(object("ns", one, map[string]any{"spec": "x"}), "2"), "ns"))
		require.NoError(t, fake.Tracker().Update(memcacheds, changed(object("ns", zero, map[string]any{"spec": "x"}), "3"), "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: zero}}, queued.take(t))
		require.Empty(t, client.taken(), "no list or watch again")
	})
}

// TestWatch_sharded_on_a_server_that_ignores_selectors_caches_everything:
// an API server that doesn't echo the selector gets one informer of the
// whole resource; a held shard's cached objects are queued at once, as
// initial events, and only the held shards' changes, and their owned
// objects', are notified.
func TestWatch_sharded_on_a_server_that_ignores_selectors_caches_everything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		zero, one := nameIn("m", 0, 2), nameIn("m", 1, 2)
		fake := memcachedClient(versioned(object("ns", zero, nil)), versioned(object("ns", one, nil)))
		var queued keys
		w, meta := shardedWatch(t, fake, &queued)
		require.Empty(t, queued.take(t), "no shard held")
		for _, name := range []string{zero, one} {
			_, found, err := w.Get(ports.Key{Namespace: "ns", Name: name})
			require.NoError(t, err)
			require.True(t, found, "the whole resource is cached")
		}

		w.Hold(1)
		require.Equal(t, []ports.Event{{Key: ports.Key{Namespace: "ns", Name: one}, Initial: true}}, queued.taken())

		require.NoError(t, fake.Tracker().Update(memcacheds, changed(object("ns", zero, map[string]any{"spec": "x"}), "4"), "ns"))
		require.NoError(t, fake.Tracker().Update(memcacheds, changed(object("ns", one, map[string]any{"spec": "x"}), "5"), "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: one}}, queued.take(t))
		// An owned object's change reaches its owner only in a held shard.
		for _, d := range []*metav1.PartialObjectMetadata{
			deployment("ns", "d0", ref("cache.example.com/v1alpha1", "Memcached", zero, true)),
			deployment("ns", "d1", ref("cache.example.com/v1alpha1", "Memcached", one, true)),
		} {
			d.Labels = map[string]string{"changed": "yes"}
			require.NoError(t, meta.Tracker().Update(deployments, d, "ns"))
		}
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: one}}, queued.take(t))

		w.Release(1)
		require.NoError(t, fake.Tracker().Update(memcacheds, changed(object("ns", one, map[string]any{"spec": "y"}), "6"), "ns"))
		synctest.Wait()
		require.Empty(t, queued.take(t))
		lists := slices.DeleteFunc(fake.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() != "list" || a.GetResource() != memcacheds
		})
		require.Len(t, lists, 2, "Check's list and the informer's: no list for a shard")
	})
}
