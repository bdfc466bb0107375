package informer

// Hostile review of the informer registry (issue 40, merge cd26e95): a
// test that FAILS on cd26e95, to show a bug; it passes since branch
// fix40.

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

// REVIEW: client-go can't remove an indexer, so each Watch that draws on
// a store another Watch keeps running leaves its indexes on it (named
// apart by the #<id> suffix) after its Stop, and every event of the store
// still calls each of them. Watches that come and go against one
// long-lived store grow its indexers without bound. Fails: 51 indexers
// after 50 Watches came and went beside the one that keeps the store.
func TestReview_stopped_Watches_leave_their_indexes_on_a_shared_store(t *testing.T) {
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
