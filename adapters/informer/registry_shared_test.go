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
	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

const managedBy = "app.kubernetes.io/managed-by=memcached"

var deploymentKind = owners.Owner{Group: "apps", Kind: "Deployment", Namespaced: true}

// fullDeployment is a Deployment as the dynamic client lists it, labelled
// as managedBy selects, at resourceVersion rv.
func fullDeployment(name, rv string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "memcached"})
	u.SetOwnerReferences(refs)
	return u
}

// sharing is two Watches on one Registry, as two Controllers of
// one Client: budget reconciles the Deployments managedBy selects, and
// memcached reconciles Memcacheds and owns those Deployments, with the
// selector given by owned.
type sharing struct {
	dynamic          *dynamicfake.FakeDynamicClient
	metadata         *metadatafake.FakeMetadataClient
	budget, memcache *informer.Watch
}

func newSharing(t *testing.T, owned string) sharing {
	t.Helper()
	controlled := fullDeployment("d1", "1", ref("cache.example.com/v1alpha1", "Memcached", "m1", true))
	notControlled := fullDeployment("d2", "1", ref("cache.example.com/v1alpha1", "Memcached", "m1", false))
	otherKind := fullDeployment("d3", "1", ref("example.com/v1", "Other", "m1", true))
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{memcacheds: "MemcachedList", deployments: "DeploymentList"},
		versioned(object("ns", "m1", nil)), controlled, notControlled, otherKind)
	meta := metadatafake.NewSimpleMetadataClient(metadataScheme(),
		deployment("ns", "d1", ref("cache.example.com/v1alpha1", "Memcached", "m1", true)))
	shared := informer.NewRegistry(logr.Discard())
	budget, err := informer.NewWatch(informer.WatchConfig{
		Dynamic: dyn, Metadata: meta, Resource: deployments, Owner: deploymentKind,
		LabelSelector: managedBy, Logger: logr.Discard(), Registry: shared,
	})
	require.NoError(t, err)
	memcache, err := informer.NewWatch(informer.WatchConfig{
		Dynamic: dyn, Metadata: meta, Resource: memcacheds, Owner: memcached,
		Owns:   []informer.OwnedConfig{{Resource: deployments, LabelSelector: owned}},
		Logger: logr.Discard(), Registry: shared,
	})
	require.NoError(t, err)
	return sharing{dynamic: dyn, metadata: meta, budget: budget, memcache: memcache}
}

// watches counts the watches of deployments each client opened.
func (s sharing) watches() (dynamic, metadata int) {
	return len(namespacesOf(s.dynamic.Actions(), "watch", "deployments")),
		len(namespacesOf(s.metadata.Actions(), "watch", "deployments"))
}

// change updates the Deployment d1, still controlled by m1, to rv.
func (s sharing) change(t *testing.T, rv string) {
	t.Helper()
	d := fullDeployment("d1", rv, ref("cache.example.com/v1alpha1", "Memcached", "m1", true))
	require.NoError(t, s.dynamic.Tracker().Update(deployments, d, "ns"))
	synctest.Wait()
}

func TestWatch_Owns_reads_the_primary_informer_of_another_Watch_with_the_same_selectors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSharing(t, managedBy)
		var owner, budget keys
		m1 := ports.Key{Namespace: "ns", Name: "m1"}
		d1 := ports.Key{Namespace: "ns", Name: "d1"}

		// The Owns starts first, and runs the informer the other Watch
		// reconciles from.
		s.memcache.Start(t.Context(), owner.add)
		require.True(t, s.memcache.WaitForSync(t.Context()))
		synctest.Wait()
		require.Equal(t, []ports.Key{m1, m1}, owner.take(t), "m1 itself, and d1 it controls; not d2 nor d3")

		s.budget.Start(t.Context(), budget.add)
		require.True(t, s.budget.WaitForSync(t.Context()))
		synctest.Wait()
		require.ElementsMatch(t, []ports.Key{d1, {Namespace: "ns", Name: "d2"}, {Namespace: "ns", Name: "d3"}}, budget.take(t),
			"the running informer hands its cache to a handler registered late")
		dynamicWatches, metadataWatches := s.watches()
		require.Equal(t, 1, dynamicWatches, "one watch of deployments for both Watches")
		require.Zero(t, metadataWatches, "the Owns runs no metadata informer")

		s.change(t, "2")
		require.Equal(t, []ports.Key{m1}, owner.take(t))
		require.Equal(t, []ports.Key{d1}, budget.take(t))

		// The Watch that started the informer stops; the other keeps it.
		s.memcache.Stop()
		s.change(t, "3")
		require.Empty(t, owner.take(t), "stopped")
		require.Equal(t, []ports.Key{d1}, budget.take(t))

		// The last Stop stops the informer: synctest fails the test on a
		// goroutine left behind.
		s.budget.Stop()
		dynamicWatches, _ = s.watches()
		require.Equal(t, 1, dynamicWatches)
	})
}

func TestWatch_Owns_with_other_selectors_runs_an_informer_of_its_own(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSharing(t, "")
		var owner, budget keys
		startWatch(t, s.budget, &budget)
		startWatch(t, s.memcache, &owner)
		dynamicWatches, metadataWatches := s.watches()
		require.Equal(t, 1, dynamicWatches)
		require.Equal(t, 1, metadataWatches, "every Deployment, not the selected ones: not shared")
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "m1"}, {Namespace: "ns", Name: "m1"}}, owner.take(t))
	})
}

func TestWatch_that_starts_after_the_informer_it_offered_stopped_runs_a_new_one(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSharing(t, managedBy)
		var owner, budget keys
		s.memcache.Start(t.Context(), owner.add)
		require.True(t, s.memcache.WaitForSync(t.Context()))
		s.memcache.Stop()

		startWatch(t, s.budget, &budget)
		require.Len(t, budget.take(t), 3, "d1, d2 and d3")
		s.change(t, "2")
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "d1"}}, budget.take(t))
		_, found, err := s.budget.Get(ports.Key{Namespace: "ns", Name: "d1"})
		require.NoError(t, err)
		require.True(t, found, "read from the new informer's cache")
		// Each informer lists before it syncs; the stopped one may have
		// stopped before its watch began, so its lists are counted.
		lists := namespacesOf(s.dynamic.Actions(), "list", "deployments")
		require.Len(t, lists, 2, "the stopped informer's, and the new one's")
	})
}
