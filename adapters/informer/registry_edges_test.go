package informer_test

// The informer registry at its edges: selectors written two ways,
// owners of two kinds on one store, Watches starting and stopping at
// once, a second Stop, resyncs and shards on a shared informer.

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// startedWatch returns a Watch of c, started with its keys queued on q
// and synced; the test's end stops it.
func startedWatch(t *testing.T, c informer.WatchConfig, q *keys) *informer.Watch {
	t.Helper()
	w, err := informer.NewWatch(c)
	require.NoError(t, err)
	startWatch(t, w, q)
	return w
}

// edgeClients returns fakes holding the Memcached m1, the Deployment d1
// it controls (in both clients' forms) and the Secret s1.
func edgeClients() (*dynamicfake.FakeDynamicClient, *metadatafake.FakeMetadataClient) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{memcacheds: "MemcachedList", deployments: "DeploymentList", secrets: "SecretList"},
		versioned(object("ns", "m1", nil)),
		fullDeployment("d1", "1", ref("cache.example.com/v1alpha1", "Memcached", "m1", true)),
		secret("s1", nil))
	meta := metadatafake.NewSimpleMetadataClient(metadataScheme(),
		deployment("ns", "d1", ref("cache.example.com/v1alpha1", "Memcached", "m1", true)))
	return dyn, meta
}

// watchesOfBoth counts the watches of resource the two clients opened.
func watchesOfBoth(dyn *dynamicfake.FakeDynamicClient, meta *metadatafake.FakeMetadataClient, resource string) int {
	return len(namespacesOf(dyn.Actions(), "watch", resource)) + len(namespacesOf(meta.Actions(), "watch", resource))
}

// Two Owns whose label selectors select the same objects, written in
// another order, open one watch: the registry keys an informer by the
// selectors as the API server reads them.
func TestOwns_with_one_selector_written_two_ways_open_one_watch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		for _, sel := range []string{"a=1,b=2", "b=2, a=1"} {
			startedWatch(t, informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
				Owns:   []informer.OwnedConfig{{Resource: deployments, LabelSelector: sel}},
				Logger: logr.Discard(), Registry: registry,
			}, &keys{})
		}
		require.Equal(t, 1, watchesOfBoth(dyn, meta, "deployments"), "one selector, one watch")
	})
}

// Owns of two kinds share one owned store: each hears only the owner of
// its own kind and group, whatever the name.
func TestOwns_of_two_kinds_sharing_a_store_each_hear_their_own_owner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, _ := edgeClients()
		meta := metadatafake.NewSimpleMetadataClient(metadataScheme(),
			deployment("ns", "d1", ref("cache.example.com/v1alpha1", "Memcached", "x", true)),
			deployment("ns", "d2", ref("other.example.com/v1", "Memcached", "x", true)),
			deployment("ns", "d3", ref("cache.example.com/v1", "Redis", "x", true)))
		registry := informer.NewRegistry(logr.Discard())
		redis := owners.Owner{Group: "cache.example.com", Kind: "Redis", Namespaced: true}
		var qs [2]keys
		for i, o := range []owners.Owner{memcached, redis} {
			startedWatch(t, informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: o,
				Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
			}, &qs[i])
		}
		x := ports.Key{Namespace: "ns", Name: "x"}
		require.Equal(t, 1, len(namespacesOf(meta.Actions(), "watch", "deployments")))
		require.Contains(t, qs[0].take(t), x)
		got := qs[1].take(t)
		require.Contains(t, got, x)
		require.NoError(t, meta.Tracker().Update(deployments, func() *metav1.PartialObjectMetadata {
			d := deployment("ns", "d2", ref("other.example.com/v1", "Memcached", "x", true))
			d.ResourceVersion = "2"
			return d
		}(), "ns"))
		synctest.Wait()
		require.Empty(t, qs[0].take(t), "another group's Memcached")
		require.Empty(t, qs[1].take(t), "not a Redis")
	})
}

// Watches that start and stop concurrently on one Registry, for the race
// detector: every one hears its initial list, and no informer is left.
func TestWatches_starting_and_stopping_concurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for range 3 {
					w, err := informer.NewWatch(informer.WatchConfig{
						Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
						Owns:    []informer.OwnedConfig{{Resource: deployments}},
						Related: []informer.RelatedConfig{{Resource: secrets}},
						Logger:  logr.Discard(), Registry: registry,
					})
					if err != nil {
						t.Error(err)
						return
					}
					var q keys
					w.Start(t.Context(), q.add)
					if !w.WaitForSync(t.Context()) {
						t.Error("never synced")
					}
					if i%2 == 0 {
						// Synced: the handler was handed the initial list.
						if n := len(q.take(t)); n < 1 {
							t.Errorf("Watch %d heard %d initial keys", i, n)
						}
					}
					w.Stop()
				}
			})
		}
		wg.Wait()
		require.Zero(t, registry.Running())
	})
}

// A second Stop of one Watch of two that share an informer counts no
// second user gone, so the other Watch's informer goes on.
func TestA_second_Stop_of_one_Watch_leaves_the_shared_informer_to_the_other(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		var ws [2]*informer.Watch
		var qs [2]keys
		for i := range ws {
			ws[i] = startedWatch(t, informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
				Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
			}, &qs[i])
		}
		qs[1].take(t)
		ws[0].Stop()
		ws[0].Stop()
		changeDeployment(t, meta, "2")
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "m1"}}, qs[1].take(t), "Watch 1 still runs")
	})
}

// An Owns that reads the primary informer of a Watch that resyncs hourly
// never resyncs, whichever Watch started the informer; the primary's own
// handler resyncs at its period.
func TestAn_Owns_on_a_resyncing_primary_informer_never_resyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		budget, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: deployments, Owner: deploymentKind,
			Resync: time.Hour, Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		owner, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached, Resync: 10 * time.Minute,
			Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		var budgets, owners keys
		startWatch(t, owner, &owners)
		startWatch(t, budget, &budgets)
		require.Zero(t, len(namespacesOf(meta.Actions(), "watch", "deployments")), "the Owns reads budget's informer")
		budgets.take(t)
		owners.take(t)
		time.Sleep(time.Hour + time.Minute)
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "d1"}}, budgets.takeResyncs(t), "budget's hourly resync")
		ownerResyncs := len(owners.takeResyncs(t))
		// The owner's own primary resyncs every 10 minutes: m1, six
		// times; d1's Owns adds none of its own.
		require.Equal(t, 6, ownerResyncs)
	})
}

// A sharded Watch's Owns and an unsharded one's share one owned informer:
// each hears the owners it holds, the sharded one only those of its held
// shards.
func TestA_sharded_and_an_unsharded_Owns_share_one_informer_each_with_its_shards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		var ws [2]*informer.Watch
		var qs [2]keys
		for i := range ws {
			ws[i] = startedWatch(t, informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached, Shards: []int{0, 2}[i],
				Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
			}, &qs[i])
		}
		require.Len(t, namespacesOf(meta.Actions(), "watch", "deployments"), 1)
		m1 := ports.Key{Namespace: "ns", Name: "m1"}
		held := shard.Of("m1-uid", 2)
		ws[1].Hold(1 - held)
		synctest.Wait()
		qs[0].take(t)
		qs[1].take(t)
		changeDeployment(t, meta, "2")
		require.Equal(t, []ports.Key{m1}, qs[0].take(t))
		require.Empty(t, qs[1].take(t), "m1's shard isn't held")
		ws[1].Hold(held)
		synctest.Wait()
		qs[1].take(t)
		changeDeployment(t, meta, "3")
		require.Equal(t, []ports.Key{m1}, qs[0].take(t))
		require.Equal(t, []ports.Key{m1}, qs[1].take(t))
	})
}
