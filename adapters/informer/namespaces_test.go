package informer_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

// memcachedNamingIn is a Memcached whose spec names the ConfigMap
// configMap in namespace cmNamespace, which may be another than its own.
func memcachedNamingIn(namespace, name, cmNamespace, configMap string) *unstructured.Unstructured {
	return versioned(object(namespace, name, map[string]any{
		"spec": map[string]any{"configMap": configMap, "configMapNamespace": cmNamespace},
	}))
}

// byConfigMapIn is the index of the ConfigMap each Memcached's spec names,
// in the namespace it names, or its own.
func byConfigMapIn(doc []byte) []ports.Key {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			ConfigMap          string `json:"configMap"`
			ConfigMapNamespace string `json:"configMapNamespace"`
		} `json:"spec"`
	}
	if json.Unmarshal(doc, &m) != nil || m.Spec.ConfigMap == "" {
		return nil
	}
	return []ports.Key{{Namespace: cmp.Or(m.Spec.ConfigMapNamespace, m.Metadata.Namespace), Name: m.Spec.ConfigMap}}
}

// namespacedWatch is a Watch over the namespace set {a, b} of a cluster of
// three namespaces, a, b and c, each with a Memcached, a Deployment it
// controls and a ConfigMap; the Memcacheds of a and b both name a's
// ConfigMap "shared".
type namespacedWatch struct {
	w        *informer.Watch
	dynamic  *dynamicfake.FakeDynamicClient
	metadata *metadatafake.FakeMetadataClient
}

func newNamespacedWatch(t *testing.T) namespacedWatch {
	t.Helper()
	rec := portsmock.NewMockRecorder(gomock.NewController(t))
	var objects []runtime.Object
	var owned []runtime.Object
	for _, ns := range []string{"a", "b", "c"} {
		objects = append(objects,
			memcachedNaming(ns, "m-"+ns, "own"),
			configMap(ns, "own", nil, map[string]any{"in": ns}))
		owned = append(owned, deployment(ns, "d-"+ns, ref("cache.example.com/v1alpha1", "Memcached", "m-"+ns, true)))
	}
	objects = append(objects,
		memcachedNamingIn("a", "shares-a", "a", "shared"), memcachedNamingIn("b", "shares-b", "a", "shared"),
		memcachedNamingIn("c", "shares-c", "a", "shared"),
		configMap("a", "shared", nil, nil))
	client := relatedClient(objects...)
	meta := metadatafake.NewSimpleMetadataClient(metadataScheme(), owned...)
	w, err := informer.NewWatch(informer.WatchConfig{
		Dynamic: client, Metadata: meta, Resource: memcacheds, Owner: memcached,
		Namespaces: []string{"a", "b"},
		Owns:       []informer.OwnedConfig{{Resource: deployments}},
		Related:    []informer.RelatedConfig{{Resource: configMaps, Namespaces: []string{"a", "b"}, Index: "configMap"}},
		Indexes:    []informer.Index{{Name: "configMap", Keys: byConfigMapIn}},
		Recorder:   rec, Logger: logr.Discard(),
	})
	require.NoError(t, err)
	return namespacedWatch{w: w, dynamic: client, metadata: meta}
}

// namespacesOf returns the namespace of each request of verb for
// resource that actions holds, in order, "" for every namespace.
func namespacesOf(actions []k8stesting.Action, verb, resource string) []string {
	var out []string
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			out = append(out, a.GetNamespace())
		}
	}
	slices.Sort(out)
	return out
}

func TestWatch_over_a_namespace_set_watches_each_namespace_and_routes_reads_by_namespace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := newNamespacedWatch(t)
		var queued keys
		startWatch(t, nw.w, &queued)
		key := func(ns, name string) ports.Key { return ports.Key{Namespace: ns, Name: name} }

		// Each resource is watched in a and in b, never in c nor in every
		// namespace.
		ab := []string{"a", "b"}
		require.Equal(t, ab, namespacesOf(nw.dynamic.Actions(), "watch", "memcacheds"))
		require.Equal(t, ab, namespacesOf(nw.dynamic.Actions(), "watch", "configmaps"))
		require.Equal(t, ab, namespacesOf(nw.metadata.Actions(), "watch", "deployments"))
		for _, k := range queued.take(t) {
			require.NotEqual(t, "c", k.Namespace, "c is outside the set: %v", k)
		}

		// The primary's reads go to the key's namespace.
		for _, k := range []ports.Key{key("a", "m-a"), key("b", "m-b")} {
			_, found, err := nw.w.Get(k)
			require.NoError(t, err)
			require.True(t, found, "%v", k)
		}
		_, found, err := nw.w.Get(key("c", "m-c"))
		require.NoError(t, err)
		require.False(t, found, "never cached")

		// An index reads the objects of every namespace of the set that
		// name the key, and a related change queues them all.
		docs, err := nw.w.Primary().ByIndex("configMap", key("a", "shared"))
		require.NoError(t, err)
		require.Len(t, docs, 2, "shares-a and shares-b, not shares-c")
		changed := configMap("a", "shared", nil, map[string]any{"x": "1"})
		changed.SetResourceVersion("2")
		require.NoError(t, nw.dynamic.Tracker().Update(configMaps, changed, "a"))
		synctest.Wait()
		require.ElementsMatch(t, []ports.Key{key("a", "shares-a"), key("b", "shares-b")}, queued.take(t))

		// The related cache reads each namespace of its set, one or all,
		// and refuses another.
		cms := nw.w.Related()[0]
		doc, found, err := cms.Get(key("b", "own"))
		require.NoError(t, err)
		require.True(t, found)
		require.JSONEq(t, `{"in":"b"}`, string(dataOf(t, doc)))
		_, _, err = cms.Get(key("c", "own"))
		require.EqualError(t, err, `the cache of /v1, Resource=configmaps holds namespaces ["a" "b"], not "c"`)
		all, err := cms.List("", nil)
		require.NoError(t, err)
		require.Len(t, all, 3, "a's two and b's one")
		inB, err := cms.List("b", labels.Everything())
		require.NoError(t, err)
		require.Len(t, inB, 1)
		_, err = cms.List("c", nil)
		require.EqualError(t, err, `the cache of /v1, Resource=configmaps holds namespaces ["a" "b"], not "c"`)

		// Changes in c queue nothing; the same in b queue b's.
		for _, ns := range []string{"c", "b"} {
			m := memcachedNaming(ns, "m-"+ns, "own")
			m.SetResourceVersion("2")
			require.NoError(t, nw.dynamic.Tracker().Update(memcacheds, m, ns))
			d := deployment(ns, "d-"+ns, ref("cache.example.com/v1alpha1", "Memcached", "m-"+ns, true))
			d.ResourceVersion = "2"
			require.NoError(t, nw.metadata.Tracker().Update(deployments, d, ns))
			cm := configMap(ns, "own", map[string]string{"changed": "yes"}, nil)
			cm.SetResourceVersion("2")
			require.NoError(t, nw.dynamic.Tracker().Update(configMaps, cm, ns))
		}
		synctest.Wait()
		require.Equal(t, []ports.Key{key("b", "m-b"), key("b", "m-b"), key("b", "m-b")}, queued.take(t),
			"the changes of b's Memcached, of the Deployment it owns and of the ConfigMap it names; none of c's")
	})
}

func TestWatch_over_a_namespace_set_syncs_once_every_namespace_has(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nw := newNamespacedWatch(t)
		// b's list of Memcacheds fails until the test lets it through:
		// the reflector retries it with backoff.
		var listable atomic.Bool
		nw.dynamic.PrependReactor("list", "memcacheds", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetNamespace() != "b" || listable.Load() {
				return false, nil, nil
			}
			return true, nil, errors.New("etcdserver: request timed out")
		})
		nw.w.Start(t.Context(), func(ports.Event) {})
		defer nw.w.Stop()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		require.False(t, nw.w.WaitForSync(ctx), "a's caches synced, b's Memcacheds didn't")
		require.False(t, nw.w.Primary().Synced())
		require.True(t, nw.w.Related()[0].Synced())
		listable.Store(true)
		require.True(t, nw.w.WaitForSync(t.Context()))
		require.True(t, nw.w.Primary().Synced())
	})
}

func TestWatch_Check_lists_each_namespace_and_names_the_one_that_fails(t *testing.T) {
	forbidden := errors.New("forbidden")
	failIn := func(ns string) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			return a.GetNamespace() == ns, nil, forbidden
		}
	}
	for _, tc := range []struct {
		name string
		fail func(nw namespacedWatch)
		want string
	}{{
		name: "the primary",
		fail: func(nw namespacedWatch) { nw.dynamic.PrependReactor("list", "memcacheds", failIn("b")) },
		want: `listing cache.example.com/v1alpha1, Resource=memcacheds in namespace "b": forbidden`,
	}, {
		name: "an owned resource",
		fail: func(nw namespacedWatch) { nw.metadata.PrependReactor("list", "deployments", failIn("a")) },
		want: `listing apps/v1, Resource=deployments in namespace "a": forbidden`,
	}, {
		name: "a related resource",
		fail: func(nw namespacedWatch) { nw.dynamic.PrependReactor("list", "configmaps", failIn("b")) },
		want: `listing /v1, Resource=configmaps in namespace "b": forbidden`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			nw := newNamespacedWatch(t)
			require.NoError(t, nw.w.Check(t.Context()))
			ab := []string{"a", "b"}
			require.Equal(t, ab, namespacesOf(nw.dynamic.Actions(), "list", "memcacheds"))
			require.Equal(t, ab, namespacesOf(nw.dynamic.Actions(), "list", "configmaps"))
			require.Equal(t, ab, namespacesOf(nw.metadata.Actions(), "list", "deployments"))
			tc.fail(nw)
			err := nw.w.Check(t.Context())
			require.EqualError(t, err, tc.want)
			require.ErrorIs(t, err, forbidden)
		})
	}
}

func TestWatch_of_one_namespace_or_all_names_no_namespace_when_Check_fails(t *testing.T) {
	for _, namespaces := range [][]string{nil, {"a"}} {
		client := relatedClient()
		client.PrependReactor("list", "memcacheds", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("the server could not find the requested resource")
		})
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: client, Resource: memcacheds, Owner: memcached, Namespaces: namespaces, Logger: logr.Discard(),
		})
		require.NoError(t, err)
		require.EqualError(t, w.Check(t.Context()),
			"listing cache.example.com/v1alpha1, Resource=memcacheds: the server could not find the requested resource",
			"the settings name the one namespace")
		want := []string{""}
		if namespaces != nil {
			want = namespaces
		}
		require.Equal(t, want, namespacesOf(client.Actions(), "list", "memcacheds"))
	}
}
