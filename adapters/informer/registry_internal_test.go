package informer

import (
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// Watches that come and go beside one that keeps a store running add no
// indexer to it: a primary's indexes are built into a store when it is
// made, never added to a running one, since client-go can't remove an
// indexer and every event of the store would go on calling the indexes
// of every Watch that ever drew on it, without bound.
func TestWatches_that_come_and_go_add_no_index_to_a_store_another_Watch_runs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gvr := schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}
		m1 := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
			"metadata": map[string]any{"namespace": "ns", "name": "m1", "uid": "m1-uid", "resourceVersion": "1"},
		}}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{gvr: "MemcachedList"}, m1)
		registry := NewRegistry(logr.Discard())
		newWatch := func() *Watch {
			w, err := NewWatch(WatchConfig{
				Dynamic: dyn, Resource: gvr, Owner: owners.Owner{Group: gvr.Group, Kind: "Memcached", Namespaced: true},
				Indexes: []Index{{Name: "ref", Keys: func([]byte) []ports.Key { return nil }}},
				Logger:  logr.Discard(), Registry: registry,
			})
			require.NoError(t, err)
			return w
		}
		keeper := newWatch()
		keeper.Start(t.Context(), func(ports.Event) {})
		defer keeper.Stop()
		require.True(t, keeper.WaitForSync(t.Context()))
		for range 50 {
			w := newWatch()
			w.Start(t.Context(), func(ports.Event) {})
			require.True(t, w.WaitForSync(t.Context()))
			w.Stop()
		}
		synctest.Wait()
		require.Equal(t, 1, registry.running())
		indexers := keeper.primary.each[0].drawn.Load().informer.GetIndexer().GetIndexers()
		require.Len(t, indexers, 1, "the keeper's index alone")
	})
}
