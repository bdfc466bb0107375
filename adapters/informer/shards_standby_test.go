package informer_test

import (
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

// TestWatch_sharded_keeps_owned_and_related_caches_whole: a sharded
// replica is a warm standby for the shards it doesn't hold. Holding shard
// 0 of 2, its Owns cache holds every Deployment, those of shard 1's
// Memcacheds too, and its related cache every ConfigMap, with an API
// server that serves sharded watches and with one that doesn't; only its
// primary cache narrows to the shard, and only when the server shards.
// An owned object created for an owner of a shard not held is cached all
// the same, though it queues nothing; releasing every shard leaves the
// owned and related caches whole.
func TestWatch_sharded_keeps_owned_and_related_caches_whole(t *testing.T) {
	for _, tc := range []struct {
		name string
		// split: the API server serves sharded watches.
		split bool
	}{
		{"the server shards", true},
		{"the server ignores selectors", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				zero := []string{nameIn("a", 0, 2), nameIn("b", 0, 2)}
				one := []string{nameIn("c", 1, 2), nameIn("d", 1, 2)}
				fake := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
					map[schema.GroupVersionResource]string{memcacheds: "MemcachedList", leases: "LeaseList", configMaps: "ConfigMapList"},
					versioned(object("ns", zero[0], nil)), versioned(object("ns", zero[1], nil)),
					versioned(object("ns", one[0], nil)), versioned(object("ns", one[1], nil)),
					configMap("ns", "flags", nil, nil), configMap("other", "tuning", nil, nil))
				var client dynamic.Interface = fake
				if tc.split {
					client = &shardingClient{Interface: fake}
				}
				var allDeployments []string
				var owned []runtime.Object
				for _, m := range append(append([]string{}, zero...), one...) {
					owned = append(owned, deployment("ns", "d-"+m, ref("cache.example.com/v1alpha1", "Memcached", m, true)))
					allDeployments = append(allDeployments, "ns/d-"+m)
				}
				meta := metadatafake.NewSimpleMetadataClient(metadataScheme(), owned...)
				w, err := informer.NewWatch(informer.WatchConfig{
					Dynamic: client, Metadata: meta, Resource: memcacheds, Owner: memcached,
					Owns:    []informer.OwnedConfig{{Resource: deployments}},
					Related: []informer.RelatedConfig{{Resource: configMaps}},
					Shards:  2, ShardsNamespace: "leases", Logger: logr.Discard(),
				})
				require.NoError(t, err)
				require.NoError(t, w.Check(t.Context()))
				var queued keys
				startWatch(t, w, &queued)
				w.Hold(0)
				synctest.Wait()
				require.ElementsMatch(t, []ports.Key{{Namespace: "ns", Name: zero[0]}, {Namespace: "ns", Name: zero[1]}}, queued.take(t),
					"shard 0's Memcacheds alone are queued")

				cached := func(name string) bool {
					_, found, err := w.Get(ports.Key{Namespace: "ns", Name: name})
					require.NoError(t, err)
					return found
				}
				for _, m := range zero {
					require.True(t, cached(m), "%s is in the held shard", m)
				}
				for _, m := range one {
					require.Equal(t, !tc.split, cached(m), "%s is in the shard not held: cached only by a Watch of the whole resource", m)
				}
				whole := map[string][]string{
					deployments.Resource: allDeployments,
					configMaps.Resource:  {"ns/flags", "other/tuning"},
				}
				require.Equal(t, whole, w.Stored(), "the Owns and related caches hold every object, of both shards")

				// A Deployment of a Memcached of shard 1, created while
				// shard 0 alone is held: cached, not queued.
				late := deployment("ns", "d-late", ref("cache.example.com/v1alpha1", "Memcached", one[0], true))
				require.NoError(t, meta.Tracker().Create(deployments, late, "ns"))
				synctest.Wait()
				require.Empty(t, queued.take(t), "its owner's shard is not held")
				whole[deployments.Resource] = append(whole[deployments.Resource], "ns/d-late")
				require.ElementsMatch(t, whole[deployments.Resource], w.Stored()[deployments.Resource], "cached all the same")

				w.Release(0)
				synctest.Wait()
				if tc.split {
					require.False(t, cached(zero[0]), "the primary cache is dropped with the shard")
				}
				require.ElementsMatch(t, whole[deployments.Resource], w.Stored()[deployments.Resource], "no shard held, the Owns cache stays whole")
				require.Equal(t, whole[configMaps.Resource], w.Stored()[configMaps.Resource], "and so does the related cache")
			})
		})
	}
}
