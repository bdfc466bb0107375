package informer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var (
	memcacheds  = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	memcached   = owners.Owner{Group: "cache.example.com", Kind: "Memcached", Namespaced: true}
)

// keys collects the events an informer notifies, in order.
type keys struct {
	mu     sync.Mutex
	events []ports.Event
}

func (k *keys) add(ev ports.Event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.events = append(k.events, ev)
}

// take returns the keys of the changes notified since the last take, and
// fails the test if one was a resync.
func (k *keys) take(t *testing.T) []ports.Key {
	t.Helper()
	keys, resyncs := k.split()
	require.Empty(t, resyncs, "resyncs among the changes")
	return keys
}

// takeResyncs returns the keys of the resyncs notified since the last
// take, and fails the test if one was a change.
func (k *keys) takeResyncs(t *testing.T) []ports.Key {
	t.Helper()
	changes, resyncs := k.split()
	require.Empty(t, changes, "changes among the resyncs")
	return resyncs
}

func (k *keys) split() (changes, resyncs []ports.Key) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ev := range k.events {
		if ev.Resync {
			resyncs = append(resyncs, ev.Key)
		} else {
			changes = append(changes, ev.Key)
		}
	}
	k.events = nil
	return changes, resyncs
}

func object(namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cache.example.com/v1alpha1",
		"kind":       "Memcached",
		"metadata":   map[string]any{"namespace": namespace, "name": name, "uid": name + "-uid"},
	}}
	for k, v := range fields {
		u.Object[k] = v
	}
	return u
}

// versioned returns u with a resourceVersion, as the API server would
// give it: client-go's fake gives none.
func versioned(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetResourceVersion("1")
	return u
}

// run starts informers and waits for their caches and watches, and stops
// them at the end of the test.
func run(t *testing.T, informers ...cache.SharedIndexInformer) {
	t.Helper()
	r := informer.Start(t.Context(), informers...)
	t.Cleanup(r.Stop)
	require.True(t, r.WaitForSync(t.Context()))
	// Every goroutine blocked: the watches are open, so no change is lost
	// between the list and the watch.
	synctest.Wait()
}

func TestPrimary_caches_and_queues_the_resource_s_objects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := object("ns", "a", map[string]any{"status": map[string]any{"readyReplicas": int64(3)}})
		a.SetFinalizers([]string{"cache.example.com/finalizer"})
		a.SetAnnotations(map[string]string{"note": "x"})
		a.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
		elsewhere := object("other", "b", nil)
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"}, a, elsewhere)

		var queued keys
		p, err := informer.NewPrimary(client, memcacheds, informer.Config{Namespace: "ns", Notify: queued.add, Logger: logr.Discard()})
		require.NoError(t, err)
		run(t, p.Informer())
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "a"}}, queued.take(t), "only the namespace's objects")

		got, found, err := p.Get(ports.Key{Namespace: "ns", Name: "a"})
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, types.UID("a-uid"), got.UID)
		require.False(t, got.Deleting)
		require.Equal(t, []string{"cache.example.com/finalizer"}, got.Finalizers)
		require.Equal(t, map[string]string{"note": "x"}, got.Annotations)
		require.JSONEq(t, `{"readyReplicas":3}`, string(got.Status))
		want := a.DeepCopy()
		want.SetManagedFields(nil)
		wantJSON, err := want.MarshalJSON()
		require.NoError(t, err)
		require.JSONEq(t, string(wantJSON), string(got.JSON), "the whole object, but for its managedFields")
		require.NotContains(t, string(got.JSON), "managedFields", "the cache holds no managedFields")

		_, found, err = p.Get(ports.Key{Namespace: "other", Name: "b"})
		require.NoError(t, err)
		require.False(t, found)

		// A change and a deletion each queue the key.
		changed := a.DeepCopy()
		changed.SetDeletionTimestamp(ptr.To(metav1.Now()))
		delete(changed.Object, "status")
		require.NoError(t, client.Tracker().Update(memcacheds, changed, "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "a"}}, queued.take(t))
		got, found, err = p.Get(ports.Key{Namespace: "ns", Name: "a"})
		require.NoError(t, err)
		require.True(t, found)
		require.True(t, got.Deleting)
		require.Nil(t, got.Status, "no status, no JSON")

		require.NoError(t, client.Tracker().Delete(memcacheds, "ns", "a"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "a"}}, queued.take(t))
		_, found, err = p.Get(ports.Key{Namespace: "ns", Name: "a"})
		require.NoError(t, err)
		require.False(t, found)
	})
}

func TestPrimary_resync_queues_every_object_again(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"}, versioned(object("ns", "a", nil)), versioned(object("ns", "b", nil)))
		var queued keys
		p, err := informer.NewPrimary(client, memcacheds, informer.Config{Resync: time.Hour, Notify: queued.add, Logger: logr.Discard()})
		require.NoError(t, err)
		run(t, p.Informer())
		require.Len(t, queued.take(t), 2)
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		require.ElementsMatch(t, []ports.Key{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}, queued.takeResyncs(t),
			"a resync is told apart from a change, so it leaves a key's timer")
	})
}

func TestPrimary_without_resync_queues_nothing_unchanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"}, object("ns", "a", nil))
		var queued keys
		p, err := informer.NewPrimary(client, memcacheds, informer.Config{Notify: queued.add, Logger: logr.Discard()})
		require.NoError(t, err)
		run(t, p.Informer())
		require.Len(t, queued.take(t), 1)
		time.Sleep(100 * time.Hour)
		synctest.Wait()
		require.Empty(t, queued.take(t))
	})
}

// deployment is a Deployment's metadata, as the metadata client serves it.
func deployment(namespace, name string, refs ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, OwnerReferences: refs,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
	}
}

func ref(apiVersion, kind, name string, controller bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(name + "-uid"), Controller: ptr.To(controller)}
}

func metadataScheme() *runtime.Scheme {
	s := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, &metav1.PartialObjectMetadata{})
	s.AddKnownTypeWithName(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, &metav1.PartialObjectMetadata{})
	return s
}

func TestOwned_queues_the_controlling_owner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		controlled := deployment("ns", "controlled",
			ref("other.example.com/v1", "Shop", "s", false), ref("cache.example.com/v1alpha1", "Memcached", "a", true))
		controlled.UID = "controlled-uid"
		controlled.Labels = map[string]string{"app": "memcached"}
		controlled.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
		controlled.Finalizers = []string{"example.com/finalizer"}
		client := metadatafake.NewSimpleMetadataClient(metadataScheme(),
			controlled,
			deployment("ns", "other-version", ref("cache.example.com/v1", "Memcached", "b", true)),
			deployment("ns", "not-controller", ref("cache.example.com/v1alpha1", "Memcached", "c", false)),
			deployment("ns", "other-group", ref("other.example.com/v1alpha1", "Memcached", "d", true)),
			deployment("ns", "other-kind", ref("cache.example.com/v1alpha1", "Redis", "e", true)),
			deployment("ns", "no-owner"),
		)
		var queued keys
		o, err := informer.NewOwned(client, deployments, memcached, informer.Config{Notify: queued.add, Logger: logr.Discard()})
		require.NoError(t, err)
		run(t, o.Informer())
		require.ElementsMatch(t, []ports.Key{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}, queued.take(t),
			"the controller reference's group and kind are compared, its version isn't")

		// The cache holds the metadata the handler reads, and nothing
		// else: no managedFields, no labels, no kind.
		item, found, err := o.Informer().GetIndexer().GetByKey("ns/controlled")
		require.NoError(t, err)
		require.True(t, found)
		m, err := meta.Accessor(item)
		require.NoError(t, err)
		require.Equal(t, []string{"ns", "controlled"}, []string{m.GetNamespace(), m.GetName()})
		require.Empty(t, m.GetUID())
		require.Nil(t, m.GetLabels())
		require.Nil(t, m.GetManagedFields())
		require.Nil(t, m.GetOwnerReferences(), "the owner's key alone, which the queued keys show")

		// A change of owner reconciles both.
		moved := deployment("ns", "controlled", ref("cache.example.com/v1alpha1", "Memcached", "z", true))
		require.NoError(t, client.Tracker().Update(deployments, moved, "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "z"}}, queued.take(t))

		// A change to a resource owned by nobody of ours reconciles nothing.
		require.NoError(t, client.Tracker().Update(deployments, deployment("ns", "no-owner", ref("v1", "ConfigMap", "x", true)), "ns"))
		synctest.Wait()
		require.Empty(t, queued.take(t))

		require.NoError(t, client.Tracker().Delete(deployments, "ns", "controlled"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "z"}}, queued.take(t))
	})
}

func TestOwned_maps_namespaced_resources_to_a_cluster_scoped_owner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policies := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
		policy := &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "default-deny", OwnerReferences: []metav1.OwnerReference{ref("v1", "Namespace", "team-a", true)}},
		}
		client := metadatafake.NewSimpleMetadataClient(metadataScheme(), policy)
		var queued keys
		o, err := informer.NewOwned(client, policies, owners.Owner{Kind: "Namespace"}, informer.Config{Notify: queued.add, Logger: logr.Discard()})
		require.NoError(t, err)
		run(t, o.Informer())
		require.Equal(t, []ports.Key{{Name: "team-a"}}, queued.take(t))
	})
}

func TestStart_WaitForSync_gives_up_when_ctx_ends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"})
		// The list never answers.
		release := make(chan struct{})
		client.PrependReactor("list", "memcacheds", func(k8stesting.Action) (bool, runtime.Object, error) {
			<-release
			return true, &unstructured.UnstructuredList{}, nil
		})
		p, err := informer.NewPrimary(client, memcacheds, informer.Config{Notify: func(ports.Event) {}, Logger: logr.Discard()})
		require.NoError(t, err)
		r := informer.Start(t.Context(), p.Informer())
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.False(t, r.WaitForSync(ctx))
		close(release)
		r.Stop()
		require.True(t, slices.ContainsFunc(client.Actions(), func(a k8stesting.Action) bool { return a.GetVerb() == "list" }))
	})
}
