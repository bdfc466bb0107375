package informer_test

// The registry's key is (resource, view, namespace, selectors,
// transform), and a view is only metadata-only or full: every consumer of
// one key — a primary, an Owns, a related Cache, each with its own
// filters, indexes, resync and handler — reads one store.

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
)

// byRef returns an index that files every object under key.
func byRef(key ports.Key) []informer.Index {
	return []informer.Index{{Name: "ref", Keys: func([]byte) []ports.Key { return []ports.Key{key} }}}
}

func TestTwo_primaries_of_one_resource_share_one_store_each_with_its_indexes_and_resync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		a, b := ports.Key{Namespace: "ns", Name: "a"}, ports.Key{Namespace: "ns", Name: "b"}
		var ws [2]*informer.Watch
		var qs [2]keys
		for i, c := range []struct {
			resync time.Duration
			index  ports.Key
		}{{10 * time.Minute, a}, {0, b}} {
			w, err := informer.NewWatch(informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached, Resync: c.resync,
				Indexes: byRef(c.index), Logger: logr.Discard(), Registry: registry,
			})
			require.NoError(t, err)
			ws[i] = w
		}
		for i, w := range ws {
			startWatch(t, w, &qs[i])
			require.Equal(t, []ports.Key{{Namespace: "ns", Name: "m1"}}, qs[i].take(t), "Watch %d's initial list", i)
		}
		require.Len(t, namespacesOf(dyn.Actions(), "watch", "memcacheds"), 1, "one watch of memcacheds for two Controllers")
		require.Equal(t, 1, registry.Running())

		// Each Watch reads its own index, though both are named "ref".
		docs, err := ws[0].Primary().ByIndex("ref", a)
		require.NoError(t, err)
		require.Len(t, docs, 1)
		docs, err = ws[1].Primary().ByIndex("ref", a)
		require.NoError(t, err)
		require.Empty(t, docs, "Watch 1's index files m1 under b")
		docs, err = ws[1].Primary().ByIndex("ref", b)
		require.NoError(t, err)
		require.Len(t, docs, 1)

		// Each handler resyncs at its Watch's period: the first every 10
		// minutes, the second never.
		time.Sleep(31 * time.Minute)
		synctest.Wait()
		require.Len(t, qs[0].takeResyncs(t), 3)
		require.Empty(t, qs[1].takeResyncs(t))

		ws[0].Stop()
		require.Equal(t, 1, registry.Running(), "Watch 1 still reads the store")
		_, found, err := ws[1].Get(ports.Key{Namespace: "ns", Name: "m1"})
		require.NoError(t, err)
		require.True(t, found)
		ws[1].Stop()
		require.Zero(t, registry.Running())
	})
}

func TestOwns_with_and_without_filters_and_a_metadata_only_Cache_share_one_store(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		keepNone := informer.Filter{Name: "none", Keep: func(_, _ metav1.Object) bool { return false }}
		m1 := ports.Key{Namespace: "ns", Name: "m1"}
		var qs [3]keys
		var ws [3]*informer.Watch
		for i := range ws {
			c := informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
				Logger: logr.Discard(), Registry: registry,
			}
			switch i {
			case 0:
				c.Owns = []informer.OwnedConfig{{Resource: deployments}}
			case 1:
				c.Owns = []informer.OwnedConfig{{Resource: deployments, Filters: []informer.Filter{keepNone}}}
			case 2:
				c.Related = []informer.RelatedConfig{{Resource: deployments, MetadataOnly: true,
					Map: func(metav1.Object) []ports.Key { return []ports.Key{m1} }}}
			}
			w, err := informer.NewWatch(c)
			require.NoError(t, err)
			ws[i] = w
		}
		for i, w := range ws {
			startWatch(t, w, &qs[i])
			qs[i].take(t)
		}
		require.Len(t, namespacesOf(meta.Actions(), "watch", "deployments"), 1,
			"one metadata-only watch of deployments for two Owns and a metadata-only Cache")

		changeDeployment(t, meta, "2")
		require.Equal(t, []ports.Key{m1}, qs[0].take(t), "no filter")
		require.Empty(t, qs[1].take(t), "its filter keeps no update")
		require.Equal(t, []ports.Key{m1}, qs[2].take(t), "the Cache's mapping")
		doc, found, err := ws[2].Related()[0].Get(ports.Key{Namespace: "ns", Name: "d1"})
		require.NoError(t, err)
		require.True(t, found)
		require.Contains(t, string(doc), `"ownerReferences"`, "the Cache reads the object's metadata")
		for _, w := range ws {
			w.Stop()
		}
		require.Zero(t, registry.Running())
	})
}

func TestA_primary_and_a_full_Cache_of_one_resource_share_one_store(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		d1 := ports.Key{Namespace: "ns", Name: "d1"}
		budget, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: deployments, Owner: deploymentKind,
			Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		reader, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Related: []informer.RelatedConfig{{Resource: deployments,
				Map: func(metav1.Object) []ports.Key { return []ports.Key{{Namespace: "ns", Name: "m1"}} }}},
			Logger: logr.Discard(), Registry: registry,
		})
		require.NoError(t, err)
		var budgets, readers keys
		startWatch(t, reader, &readers)
		startWatch(t, budget, &budgets)
		require.Len(t, namespacesOf(dyn.Actions(), "watch", "deployments"), 1, "one full watch of deployments")
		require.Equal(t, []ports.Key{d1}, budgets.take(t))
		doc, found, err := reader.Related()[0].Get(d1)
		require.NoError(t, err)
		require.True(t, found)
		obj, _, err := budget.Get(d1)
		require.NoError(t, err)
		require.Equal(t, &obj.JSON[0], &doc[0], "one store: the same cached JSON")
		docs, err := reader.Related()[0].List("ns", nil)
		require.NoError(t, err)
		require.Len(t, docs, 1)
	})
}

// A Watch whose Start context ends hears no more events and releases its
// stores, which the Watch still running keeps alone.
func TestA_Watch_whose_Start_context_ends_hears_nothing_more_and_releases_its_stores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		var ws [2]*informer.Watch
		for i := range ws {
			w, err := informer.NewWatch(informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
				Owns: []informer.OwnedConfig{{Resource: deployments}}, Logger: logr.Discard(), Registry: registry,
			})
			require.NoError(t, err)
			ws[i] = w
		}
		ctx, cancel := context.WithCancel(t.Context())
		var early, late keys
		ws[0].Start(ctx, early.add)
		require.True(t, ws[0].WaitForSync(t.Context()))
		ws[1].Start(t.Context(), late.add)
		require.True(t, ws[1].WaitForSync(t.Context()))
		synctest.Wait()
		early.take(t)
		late.take(t)

		cancel()
		synctest.Wait()
		changeDeployment(t, meta, "2")
		require.Empty(t, early.take(t), "its context ended")
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "m1"}}, late.take(t))
		ws[1].Stop()
		require.Zero(t, registry.Running(), "Watch 0 released its stores when its context ended")
		ws[0].Stop()
	})
}

// A Watch built after a store of its key started, that asks for more than
// that store keeps, runs a store of its own, and a later Watch that asks
// for the same reads that one: the Registry shares every running store of
// a key, not only the first, so two filtered Owns built after an
// unfiltered Owns' store started open one metadata watch beside its one,
// not one each.
func TestWatches_built_late_that_ask_for_more_share_one_store_of_their_own(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dyn, meta := edgeClients()
		registry := informer.NewRegistry(logr.Discard())
		newWatch := func(filters []informer.Filter) *informer.Watch {
			w, err := informer.NewWatch(informer.WatchConfig{
				Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
				Owns:   []informer.OwnedConfig{{Resource: deployments, Filters: filters}},
				Logger: logr.Discard(), Registry: registry,
			})
			require.NoError(t, err)
			return w
		}
		startWatch(t, newWatch(nil), &keys{})
		keepAll := []informer.Filter{{Name: "all", Keep: func(_, _ metav1.Object) bool { return true }}}
		late := []*informer.Watch{newWatch(keepAll), newWatch(keepAll)}
		for _, w := range late {
			startWatch(t, w, &keys{})
		}
		require.Len(t, namespacesOf(meta.Actions(), "watch", "deployments"), 2,
			"the first Owns' store, and one store for both late filtered Owns")
	})
}
