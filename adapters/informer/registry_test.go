package informer_test

import (
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// secret is a Secret as the API server serves it.
func secret(name string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"namespace": "ns", "name": name, "resourceVersion": "1"},
		"data":     data,
	}}
	return u
}

// registered is three Watches of Memcacheds on one Registry, as three
// Controllers of one Client, which each own Deployments and may watch
// Secrets as related given.
type registered struct {
	registry *informer.Registry
	dynamic  *dynamicfake.FakeDynamicClient
	metadata *metadatafake.FakeMetadataClient
	watches  [3]*informer.Watch
	queued   [3]*keys
}

func newRegistered(t *testing.T, related func(i int) []informer.RelatedConfig) *registered {
	t.Helper()
	r := &registered{registry: informer.NewRegistry(logr.Discard())}
	r.dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{memcacheds: "MemcachedList", secrets: "SecretList"},
		versioned(object("ns", "m1", nil)), secret("s1", map[string]any{"a": "YQ==", "b": "Yg=="}))
	r.metadata = metadatafake.NewSimpleMetadataClient(metadataScheme(),
		deployment("ns", "d1", ref("cache.example.com/v1alpha1", "Memcached", "m1", true)))
	for i := range r.watches {
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: r.dynamic, Metadata: r.metadata, Resource: memcacheds, Owner: memcached,
			Owns:    []informer.OwnedConfig{{Resource: deployments}},
			Related: related(i), Logger: logr.Discard(), Registry: r.registry,
		})
		require.NoError(t, err)
		r.watches[i], r.queued[i] = w, &keys{}
	}
	return r
}

// start starts Watch i and waits for its caches.
func (r *registered) start(t *testing.T, i int) {
	t.Helper()
	r.watches[i].Start(t.Context(), r.queued[i].add)
	require.True(t, r.watches[i].WaitForSync(t.Context()))
	synctest.Wait()
}

func TestRegistry_three_Owns_of_one_resource_open_one_watch_and_stop_with_the_last(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRegistered(t, func(int) []informer.RelatedConfig { return nil })
		m1 := ports.Key{Namespace: "ns", Name: "m1"}
		for i := range r.watches {
			r.start(t, i)
			// Each consumer sees its initial list as such, the late ones
			// from the running informer's cache.
			var initial []ports.Key
			r.queued[i].mu.Lock()
			for _, ev := range r.queued[i].events {
				if ev.Initial {
					initial = append(initial, ev.Key)
				}
			}
			r.queued[i].mu.Unlock()
			require.Equal(t, []ports.Key{m1, m1}, initial, "Watch %d: m1 itself, and d1 it controls, as its initial list", i)
			r.queued[i].take(t)
		}
		require.Len(t, namespacesOf(r.metadata.Actions(), "watch", "deployments"), 1, "one watch of deployments for three Owns")
		require.Len(t, namespacesOf(r.metadata.Actions(), "list", "deployments"), 1, "one list of deployments for three Owns")

		changeDeployment(t, r.metadata, "2")
		for i := range r.watches {
			require.Equal(t, []ports.Key{m1}, r.queued[i].take(t), "Watch %d", i)
		}

		// A consumer that stops hears nothing more; the others go on.
		r.watches[0].Stop()
		changeDeployment(t, r.metadata, "3")
		require.Empty(t, r.queued[0].take(t), "stopped")
		require.Equal(t, []ports.Key{m1}, r.queued[1].take(t))
		require.Equal(t, []ports.Key{m1}, r.queued[2].take(t))
		require.Len(t, namespacesOf(r.metadata.Actions(), "watch", "deployments"), 1, "the watch went on")

		// The informer stops with its last consumer: goleak, and synctest,
		// fail the test on a goroutine left behind.
		r.watches[1].Stop()
		r.watches[2].Stop()
		require.Zero(t, r.registry.Running())
	})
}

func TestRegistry_related_Caches_share_a_store_unless_one_has_a_Transform(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s1 := ports.Key{Namespace: "ns", Name: "s1"}
		byName := func(metav1.Object) []ports.Key { return []ports.Key{{Namespace: "ns", Name: "m1"}} }
		dropB := func(doc []byte) ([]byte, error) {
			return []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"namespace":"ns","name":"s1"},"data":{"a":"YQ=="}}`), nil
		}
		r := newRegistered(t, func(i int) []informer.RelatedConfig {
			rc := informer.RelatedConfig{Resource: secrets, Map: byName}
			if i == 2 {
				rc.Reshape = dropB
			}
			return []informer.RelatedConfig{rc}
		})
		for i := range r.watches {
			r.start(t, i)
		}
		require.Len(t, namespacesOf(r.dynamic.Actions(), "watch", "secrets"), 2,
			"one watch of secrets for the two Caches without a transform, and one for the Cache with its own")

		whole, found, err := r.watches[0].Related()[0].Get(s1)
		require.NoError(t, err)
		require.True(t, found)
		shared, _, err := r.watches[1].Related()[0].Get(s1)
		require.NoError(t, err)
		require.Equal(t, &whole[0], &shared[0], "one store: the same cached JSON")
		reshaped, _, err := r.watches[2].Related()[0].Get(s1)
		require.NoError(t, err)
		require.NotContains(t, string(reshaped), `"b"`, "the transform's own store")
		require.Contains(t, string(whole), `"b"`, "untouched by another Cache's transform")

		r.watches[0].Stop()
		_, found, err = r.watches[1].Related()[0].Get(s1)
		require.NoError(t, err)
		require.True(t, found, "the store outlives a consumer that stops")
		require.True(t, r.watches[1].Related()[0].Synced())
		r.watches[1].Stop()
		r.watches[2].Stop()
		require.Zero(t, r.registry.Running())
	})
}

// changeDeployment updates the Deployment d1, still controlled by m1, to
// rv.
func changeDeployment(t *testing.T, client *metadatafake.FakeMetadataClient, rv string) {
	t.Helper()
	d := deployment("ns", "d1", ref("cache.example.com/v1alpha1", "Memcached", "m1", true))
	d.ResourceVersion = rv
	require.NoError(t, client.Tracker().Update(deployments, d, "ns"))
	synctest.Wait()
}
