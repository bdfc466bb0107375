package informer_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// configMap is a ConfigMap as the API server serves it, with managedFields.
func configMap(namespace, name string, labels map[string]string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": namespace, "name": name, "resourceVersion": "1"},
		"data":     data,
	}}
	u.SetLabels(labels)
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	return u
}

// memcachedNaming is a Memcached whose spec names the ConfigMap configMap.
func memcachedNaming(namespace, name, configMap string) *unstructured.Unstructured {
	return versioned(object(namespace, name, map[string]any{"spec": map[string]any{"configMap": configMap}}))
}

// byConfigMap is the index of the ConfigMap each Memcached's spec names.
func byConfigMap(doc []byte) []ports.Key {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			ConfigMap string `json:"configMap"`
		} `json:"spec"`
	}
	if json.Unmarshal(doc, &m) != nil || m.Spec.ConfigMap == "" {
		return nil
	}
	if m.Spec.ConfigMap == "panic" {
		panic("the index panics on this one")
	}
	return []ports.Key{{Namespace: m.Metadata.Namespace, Name: m.Spec.ConfigMap}}
}

func relatedClient(objects ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{memcacheds: "MemcachedList", configMaps: "ConfigMapList"}, objects...)
}

// startWatch runs w's informers until the test ends, telling queued.
func startWatch(t *testing.T, w *informer.Watch, queued *keys) {
	t.Helper()
	w.Start(t.Context(), queued.add)
	t.Cleanup(w.Stop)
	require.True(t, w.WaitForSync(t.Context()))
	synctest.Wait()
}

func TestRelated_by_index_queues_exactly_the_objects_that_name_the_changed_one(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctrl := gomock.NewController(t)
		rec := portsmock.NewMockRecorder(ctrl)
		client := relatedClient(
			memcachedNaming("ns", "a", "flags"), memcachedNaming("ns", "b", "flags"),
			memcachedNaming("ns", "c", "other"), memcachedNaming("ns", "d", ""),
			configMap("ns", "flags", map[string]string{"app": "memcached"}, map[string]any{"threads": "4"}),
		)
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: client, Resource: memcacheds, Namespaces: []string{"ns"}, Owner: memcached,
			Related:  []informer.RelatedConfig{{Resource: configMaps, Namespaces: []string{"ns"}, Index: "configMap"}},
			Indexes:  []informer.Index{{Name: "configMap", Keys: byConfigMap}},
			Recorder: rec, Logger: logr.Discard(),
		})
		require.NoError(t, err)
		require.NoError(t, w.Check(t.Context()))
		var queued keys
		startWatch(t, w, &queued)
		queued.take(t) // the initial lists'

		flags := ports.Cause{Resource: "configmaps", Key: ports.Key{Namespace: "ns", Name: "flags"}}
		changed := configMap("ns", "flags", map[string]string{"app": "memcached"}, map[string]any{"threads": "8"})
		changed.SetResourceVersion("2")
		require.NoError(t, client.Tracker().Update(configMaps, changed, "ns"))
		synctest.Wait()
		require.ElementsMatch(t, []ports.Event{
			{Key: ports.Key{Namespace: "ns", Name: "a"}, Cause: flags},
			{Key: ports.Key{Namespace: "ns", Name: "b"}, Cause: flags},
		}, queued.drain(), "the two Memcacheds that name it, each once, saying why")

		// A ConfigMap nobody names queues nothing; one created after the
		// Memcached that names it queues that Memcached.
		require.NoError(t, client.Tracker().Create(configMaps, configMap("ns", "unnamed", nil, nil), "ns"))
		require.NoError(t, client.Tracker().Create(configMaps, configMap("ns", "other", nil, nil), "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "c"}}, queued.take(t))

		// A deletion queues them too.
		require.NoError(t, client.Tracker().Delete(configMaps, "ns", "flags"))
		synctest.Wait()
		require.ElementsMatch(t, []ports.Key{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}, queued.take(t))

		// The cache is read whole, without managedFields, and by labels.
		doc, found, err := w.Related()[0].Get(ports.Key{Namespace: "ns", Name: "other"})
		require.NoError(t, err)
		require.True(t, found)
		require.NotContains(t, string(doc), "managedFields")
		_, found, err = w.Related()[0].Get(ports.Key{Namespace: "ns", Name: "flags"})
		require.NoError(t, err)
		require.False(t, found, "deleted")

		// The index reads back the Memcacheds that name a ConfigMap.
		docs, err := w.Primary().ByIndex("configMap", ports.Key{Namespace: "ns", Name: "other"})
		require.NoError(t, err)
		require.Len(t, docs, 1)
		require.Contains(t, string(docs[0]), `"name":"c"`)
	})
}

// drain returns every event told since the last take.
func (k *keys) drain() []ports.Event {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.events
	k.events = nil
	return out
}

func TestRelated_recovers_and_records_a_panicking_mapping_and_index(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctrl := gomock.NewController(t)
		rec := portsmock.NewMockRecorder(ctrl)
		// The index panics on the Memcached that names "panic", once for
		// its add.
		rec.EXPECT().MappingPanicked(gomock.Any(), `index "configMap"`,
			ports.Cause{Resource: "memcacheds.cache.example.com", Key: ports.Key{Namespace: "ns", Name: "bad"}}, gomock.Not(gomock.Nil())).Times(1)
		client := relatedClient(memcachedNaming("ns", "bad", "panic"), memcachedNaming("ns", "good", "flags"))
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: client, Resource: memcacheds, Owner: memcached,
			Related: []informer.RelatedConfig{{Resource: configMaps, Map: func(obj metav1.Object) []ports.Key {
				if obj.GetLabels()["panic"] == "yes" {
					panic("the mapping panics on this one")
				}
				return []ports.Key{{Namespace: obj.GetNamespace(), Name: obj.GetAnnotations()["for"]}}
			}}},
			Indexes:  []informer.Index{{Name: "configMap", Keys: byConfigMap}},
			Recorder: rec, Logger: logr.Discard(),
		})
		require.NoError(t, err)
		var queued keys
		startWatch(t, w, &queued)
		queued.take(t)

		rec.EXPECT().MappingPanicked(gomock.Any(), "the mapping of configmaps",
			ports.Cause{Resource: "configmaps", Key: ports.Key{Namespace: "ns", Name: "boom"}}, gomock.Not(gomock.Nil())).Times(1)
		boom := configMap("ns", "boom", map[string]string{"panic": "yes"}, nil)
		require.NoError(t, client.Tracker().Create(configMaps, boom, "ns"))
		fine := configMap("ns", "fine", nil, nil)
		fine.SetAnnotations(map[string]string{"for": "good"})
		require.NoError(t, client.Tracker().Create(configMaps, fine, "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "good"}}, queued.take(t),
			"the informer goes on after the panic, and maps the next object")
		_, found, err := w.Related()[0].Get(ports.Key{Namespace: "ns", Name: "boom"})
		require.NoError(t, err)
		require.True(t, found, "a panicking mapping still caches its object")
	})
}

func TestRelated_reshapes_selects_and_caches_metadata_alone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := portsmock.NewMockRecorder(gomock.NewController(t))
		client := relatedClient(
			configMap("ns", "a", map[string]string{"tier": "cache"}, map[string]any{"keep": "1", "drop": "2"}),
			configMap("ns", "b", map[string]string{"tier": "web"}, nil),
			configMap("elsewhere", "c", map[string]string{"tier": "cache"}, nil),
		)
		secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
		secret := &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{"x": "y"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
		}
		scheme := metadataScheme()
		scheme.AddKnownTypeWithName(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, &metav1.PartialObjectMetadata{})
		meta := metadatafake.NewSimpleMetadataClient(scheme, secret)
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: client, Metadata: meta, Resource: memcacheds, Owner: memcached,
			Related: []informer.RelatedConfig{
				{Resource: configMaps, Map: func(metav1.Object) []ports.Key { return nil }, Reshape: func(doc []byte) ([]byte, error) {
					var u map[string]any
					if err := json.Unmarshal(doc, &u); err != nil {
						return nil, err
					}
					if data, ok := u["data"].(map[string]any); ok {
						delete(data, "drop")
					}
					return json.Marshal(u)
				}},
				{Resource: secrets, MetadataOnly: true, Namespaces: []string{"ns"}, Map: func(metav1.Object) []ports.Key { return nil }},
			},
			Recorder: rec, Logger: logr.Discard(),
		})
		require.NoError(t, err)
		require.NoError(t, w.Check(t.Context()))
		var queued keys
		startWatch(t, w, &queued)

		cms := w.Related()[0]
		doc, found, err := cms.Get(ports.Key{Namespace: "ns", Name: "a"})
		require.NoError(t, err)
		require.True(t, found)
		require.JSONEq(t, `{"keep":"1"}`, string(dataOf(t, doc)), "the transform's fields alone")

		all, err := cms.List("", labels.SelectorFromSet(labels.Set{"tier": "cache"}))
		require.NoError(t, err)
		require.Len(t, all, 2, "every namespace, by label")
		inNS, err := cms.List("ns", nil)
		require.NoError(t, err)
		require.Len(t, inNS, 2, "one namespace, every label")

		sdoc, found, err := w.Related()[1].Get(ports.Key{Namespace: "ns", Name: "s"})
		require.NoError(t, err)
		require.True(t, found)
		var got metav1.PartialObjectMetadata
		require.NoError(t, json.Unmarshal(sdoc, &got))
		require.Equal(t, map[string]string{"x": "y"}, got.Labels)
		require.Nil(t, got.ManagedFields)
	})
}

// dataOf returns the data member of a ConfigMap's JSON.
func dataOf(t *testing.T, doc []byte) json.RawMessage {
	t.Helper()
	var cm struct {
		Data json.RawMessage `json:"data"`
	}
	require.NoError(t, json.Unmarshal(doc, &cm))
	return cm.Data
}
