package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/kube"
)

type memcachedObject = kube.Object[MemcachedSpec, MemcachedStatus]

var ConfigMaps = kube.Kind[corev1.ConfigMap]{
	GVR:   corev1.SchemeGroupVersion.WithResource("configmaps"),
	Kind:  "ConfigMap",
	Scope: kube.Namespaced,
}

// byName indexes each Memcached by a ConfigMap of its own name.
func byName(m memcachedObject) []kube.Key {
	return []kube.Key{{Namespace: m.Namespace, Name: m.Name}}
}

// readingReconciler reads related objects through the handles in its
// fields, as a Reconciler that depends on them does.
type readingReconciler struct {
	memcachedReconciler
	ConfigMaps *kube.Cache[corev1.ConfigMap]
	deps       dependencies
}

// dependencies holds handles a level down, in unexported fields and an
// interface, where NewController looks for them too.
type dependencies struct {
	index   *kube.Index[memcachedObject]
	secrets interface {
		Get(namespace, name string) (corev1.Secret, bool, error)
	}
}

var Secrets = kube.Kind[corev1.Secret]{
	GVR:   corev1.SchemeGroupVersion.WithResource("secrets"),
	Kind:  "Secret",
	Scope: kube.Namespaced,
}

func TestNewController_watches_related_resources_through_Caches_and_Indexes(t *testing.T) {
	s, c := unservedClient(t)
	cms := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{LabelSelector: "app=memcached", FieldSelector: "metadata.name!=skip"})
	secrets := kube.NewCache(Secrets, kube.CacheOptions[corev1.Secret]{AllNamespaces: true})
	idx := kube.NewIndex("configMap", byName)
	rec := readingReconciler{ConfigMaps: cms, deps: dependencies{index: idx, secrets: secrets}}
	_, err := kube.NewController(s, c, validSettings(), Memcached, rec,
		kube.Watches(cms, kube.ByIndex(idx)),
		kube.Watches(secrets, kube.MapFunc(func(obj metav1.Object) []kube.Key { return nil })),
		kube.Indexes(idx),
	)
	require.NoError(t, err)

	// The handles are the Controller's, which doesn't serve: reading
	// them fails until its caches have synced, and says so.
	_, _, err = cms.Get("ns", "flags")
	require.ErrorContains(t, err, "kube: Cache(/v1, Resource=configmaps) has not synced yet: read it in a reconcile, which starts once every cache of Controller memcached-controller has synced")
	_, err = idx.List(kube.Key{Namespace: "ns", Name: "flags"})
	require.ErrorContains(t, err, `kube: Index("configMap") has not synced yet`)

	// A Cache and an Index belong to one Controller.
	second := validSettings()
	second.Name = "second"
	_, err = kube.NewController(s, c, second, Memcached, memcachedReconciler{},
		kube.Watches(cms, kube.ByIndex(idx)), kube.Indexes(idx))
	require.ErrorContains(t, err, "kube: Part 0, Watches(Cache(/v1, Resource=configmaps), ByIndex(\"configMap\")): the Cache is watched by Controller memcached-controller already: a Cache is watched by one Controller")
	require.ErrorContains(t, err, `kube: Part 1, Indexes(Index("configMap")): the Index is kept by Controller memcached-controller already`)
}

func TestCache_and_Index_reads_fail_without_a_Controller(t *testing.T) {
	cms := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	_, _, err := cms.Get("ns", "flags")
	require.EqualError(t, err, "kube: Cache(/v1, Resource=configmaps) is watched by no Controller: pass kube.Watches with it to NewController")
	_, err = cms.List("", nil)
	require.ErrorContains(t, err, "is watched by no Controller")
	_, err = kube.NewIndex("configMap", byName).List(kube.Key{Name: "x"})
	require.EqualError(t, err, `kube: Index("configMap") is kept by no Controller: pass kube.Indexes with it to NewController`)
}

func TestNewController_reports_every_related_mistake_together(t *testing.T) {
	s, c := unservedClient(t)
	badKind := kube.NewCache(kube.Kind[corev1.ConfigMap]{Scope: "Everywhere"}, kube.CacheOptions[corev1.ConfigMap]{
		LabelSelector: "app in (", FieldSelector: "metadata.name",
	})
	badResource := kube.NewResourceCache(kube.Resource[MemcachedSpec, MemcachedStatus]{Kind: "Memcached", Scope: kube.Namespaced},
		kube.CacheOptions[memcachedObject]{})
	twice := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	unkept := kube.NewIndex("unkept", byName)
	named := kube.NewIndex("configMap", byName)
	sameName := kube.NewIndex("configMap", byName)
	nameless := kube.NewIndex("", byName)
	noKeys := kube.NewIndex[memcachedObject]("noKeys", nil)
	otherType := kube.NewIndex("namespaces", func(corev1.Namespace) []kube.Key { return nil })
	unwatched := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	rec := readingReconciler{ConfigMaps: unwatched, deps: dependencies{index: kube.NewIndex("elsewhere", byName)}}

	_, err := kube.NewController(s, c, validSettings(), Memcached, rec,
		kube.Watches[corev1.ConfigMap](nil, kube.MapFunc(nil)),
		kube.Watches(badKind, kube.Mapping{}),
		kube.Watches(badResource, kube.ByIndex[memcachedObject](nil)),
		kube.Watches(twice, kube.ByIndex(unkept)),
		kube.Watches(twice, kube.ByIndex(named)),
		kube.Indexes(named),
		kube.Indexes(named),
		kube.Indexes(sameName),
		kube.Indexes(nameless),
		kube.Indexes(noKeys),
		kube.Indexes(otherType),
		kube.Indexes[memcachedObject](nil),
	)
	require.Error(t, err)
	for _, want := range []string{
		"kube: Part 0, Watches(Cache(nil), MapFunc(...)): the Cache is nil",
		"kube: Part 0, Watches(Cache(nil), MapFunc(...)): the mapping function is nil",
		`kube: Part 1, Watches(Cache(/, Resource=), Mapping{}): Kind kube.Kind[k8s.io/api/core/v1.ConfigMap]: the GVR has no Version`,
		`kube: Part 1, Watches(Cache(/, Resource=), Mapping{}): Kind kube.Kind[k8s.io/api/core/v1.ConfigMap]: the Scope "Everywhere" is neither Namespaced nor Cluster`,
		`CacheOptions.LabelSelector: "app in (" is not a label selector: `,
		`CacheOptions.FieldSelector: "metadata.name" is not a field selector: `,
		"kube: Part 1, Watches(Cache(/, Resource=), Mapping{}): the zero Mapping: make one with kube.MapFunc or kube.ByIndex",
		"kube: Part 2, Watches(Cache(/, Resource=), ByIndex(nil)): Resource Memcached: the Group is missing",
		"kube: Part 2, Watches(Cache(/, Resource=), ByIndex(nil)): the Index is nil",
		`kube: Part 3, Watches(Cache(/v1, Resource=configmaps), ByIndex("unkept")): the Controller keeps no Index("unkept"): pass kube.Indexes with it too`,
		`kube: Part 4, Watches(Cache(/v1, Resource=configmaps), ByIndex("configMap")): the Cache is watched twice`,
		`kube: Part 6, Indexes(Index("configMap")): the Index is kept twice`,
		`kube: Part 7, Indexes(Index("configMap")): another Index is named "configMap" too`,
		`kube: Part 8, Indexes(Index("")): the Index has no name`,
		`kube: Part 9, Indexes(Index("noKeys")): the Index's keys function is nil`,
		`kube: Part 10, Indexes(Index("namespaces")): the Index is over v1.Namespace, and the Controller's objects are kube.Object[`,
		"kube: Part 11, Indexes(nil): the Index is nil",
		"kube: the Reconciler's field ConfigMaps holds a *kube.Cache[k8s.io/api/core/v1.ConfigMap], which the Controller doesn't watch or keep",
		"kube: the Reconciler's field deps.index holds a *kube.Index[",
	} {
		require.ErrorContains(t, err, want)
	}
	require.NotContains(t, err.Error(), "Part 5,", "a well-made Watches of a kept Index")

	// Nothing was bound by the call that failed: the Caches are free for
	// a Controller without mistakes.
	_, err = kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{},
		kube.Watches(twice, kube.ByIndex(named)), kube.Indexes(named))
	require.NoError(t, err)
}

func TestNewKindController_indexes_its_Kind_and_caches_custom_resources(t *testing.T) {
	s, c := unservedClient(t)
	memcacheds := kube.NewResourceCache(Memcached, kube.CacheOptions[memcachedObject]{
		Transform: func(m *memcachedObject) { m.Status = MemcachedStatus{} },
	})
	byLabel := kube.NewIndex("memcached", func(ns corev1.Namespace) []kube.Key {
		return []kube.Key{{Namespace: ns.Name, Name: ns.Labels["memcached"]}}
	})
	metadataOnly := kube.NewCache(kube.Kind[metav1.PartialObjectMetadata]{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Scope: kube.Namespaced,
	}, kube.CacheOptions[metav1.PartialObjectMetadata]{})
	_, err := kube.NewKindController(s, c, validSettings(), Namespaces, defaultDeny{},
		kube.Watches(memcacheds, kube.ByIndex(byLabel)),
		kube.Watches(metadataOnly, kube.MapFunc(func(obj metav1.Object) []kube.Key { return []kube.Key{{Name: obj.GetNamespace()}} })),
		kube.Indexes(byLabel),
	)
	require.NoError(t, err)
	_, _, err = memcacheds.Get("ns", "a")
	require.ErrorContains(t, err, "has not synced yet")
}

func TestNewController_takes_a_ReconcilerFunc_whose_Caches_it_cannot_see(t *testing.T) {
	s, c := unservedClient(t)
	cms := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	f := kube.ReconcilerFunc[MemcachedSpec, MemcachedStatus](func(context.Context, memcachedObject) (kube.Result[MemcachedStatus], error) {
		_, _, err := cms.Get("ns", "x")
		return kube.Result[MemcachedStatus]{}, err
	})
	_, err := kube.NewController(s, c, validSettings(), Memcached, f)
	require.NoError(t, err, "a closure's Caches aren't found: their reads fail, naming them")
}
