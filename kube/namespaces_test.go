package kube_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
)

func TestNewController_reports_every_mistake_in_a_Cache_s_namespaces(t *testing.T) {
	s, c := unservedClient(t)
	hundredAndOne := make([]string, 101)
	for i := range hundredAndOne {
		hundredAndOne[i] = fmt.Sprintf("ns-%d", i)
	}
	Nodes := kube.Kind[corev1.Node]{GVR: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: "Node", Scope: kube.Cluster}
	caches := []*kube.Cache[corev1.ConfigMap]{
		kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{Namespaces: []string{"team-a", "Team B", "team-a"}}),
		kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{Namespaces: []string{"team-a"}, AllNamespaces: true}),
		kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{Namespaces: hundredAndOne}),
	}
	nodes := kube.NewCache(Nodes, kube.CacheOptions[corev1.Node]{Namespaces: []string{"team-a"}})
	blank := kube.NewResourceCache(Memcached, kube.CacheOptions[memcachedObject]{Namespaces: []string{""}})
	none := func(metav1.Object) []kube.Key { return nil }
	_, err := kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{},
		kube.Watches(caches[0], kube.MapFunc(none)),
		kube.Watches(caches[1], kube.MapFunc(none)),
		kube.Watches(caches[2], kube.MapFunc(none)),
		kube.Watches(nodes, kube.MapFunc(none)),
		kube.Watches(blank, kube.MapFunc(none)),
	)
	require.Error(t, err)
	for _, want := range []string{
		`kube: Part 0, Watches(Cache(/v1, Resource=configmaps), MapFunc(...)): CacheOptions.Namespaces: ["team-a" "Team B" "team-a"]: [1] "Team B" is not a namespace's name: `,
		`[2] "team-a" is [0] too: name each namespace once`,
		`kube: Part 1, Watches(Cache(/v1, Resource=configmaps), MapFunc(...)): CacheOptions.Namespaces: is ["team-a"], and AllNamespaces is set: set one of them`,
		`kube: Part 2, Watches(Cache(/v1, Resource=configmaps), MapFunc(...)): CacheOptions.Namespaces: has 101 namespaces: want from 1 to 100`,
		`kube: Part 3, Watches(Cache(/v1, Resource=nodes), MapFunc(...)): CacheOptions.Namespaces: is ["team-a"], but Node is cluster-scoped, so its objects are in no namespace: want none`,
		`kube: Part 4, Watches(Cache(cache.example.com/v1alpha1, Resource=memcacheds), MapFunc(...)): CacheOptions.Namespaces: [""]: [0] `,
	} {
		require.ErrorContains(t, err, want)
	}

	// An empty set is no set.
	empty := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{Namespaces: []string{}, AllNamespaces: true})
	_, err = kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{}, kube.Watches(empty, kube.MapFunc(none)))
	require.NoError(t, err)
}

func TestCache_read_of_a_namespace_outside_its_set_fails_saying_how_to_widen_it(t *testing.T) {
	s, c := unservedClient(t)
	for _, tc := range []struct {
		name     string
		settings func(*kube.Settings)
		opts     kube.CacheOptions[corev1.ConfigMap]
		// inside are namespaces the Cache holds, whose reads fail only
		// because the Controller doesn't serve; want is the error of a
		// read of "elsewhere", "" when it holds every namespace.
		inside []string
		want   string
	}{{
		name:     "the Controller's namespace",
		settings: func(s *kube.Settings) { s.Namespace = "team-a" },
		inside:   []string{"team-a"},
		want: `kube: Cache(/v1, Resource=configmaps): namespace "elsewhere" is outside the Cache, which holds namespace "team-a" only, ` +
			`as Controller memcached-controller's Settings.Namespace: set CacheOptions.Namespaces to the namespaces it reads, or CacheOptions.AllNamespaces to watch every namespace`,
	}, {
		name:     "the Controller's set",
		settings: func(s *kube.Settings) { s.Namespaces = []string{"team-a", "team-b"} },
		inside:   []string{"team-a", "team-b"},
		want: `kube: Cache(/v1, Resource=configmaps): namespace "elsewhere" is outside the Cache, which holds namespaces ["team-a" "team-b"] only, ` +
			`as Controller memcached-controller's Settings.Namespaces: set CacheOptions.Namespaces to the namespaces it reads, or CacheOptions.AllNamespaces to watch every namespace`,
	}, {
		name:     "the Cache's own set, in place of the Controller's",
		settings: func(s *kube.Settings) { s.Namespaces = []string{"team-a", "team-b"} },
		opts:     kube.CacheOptions[corev1.ConfigMap]{Namespaces: []string{"shared"}},
		inside:   []string{"shared"},
		want: `kube: Cache(/v1, Resource=configmaps): namespace "elsewhere" is outside the Cache, which holds namespace "shared" only, ` +
			`as its CacheOptions.Namespaces say: add "elsewhere" to them, or set CacheOptions.AllNamespaces in their place to watch every namespace`,
	}, {
		name:     "every namespace",
		settings: func(s *kube.Settings) { s.Namespaces = []string{"team-a", "team-b"} },
		opts:     kube.CacheOptions[corev1.ConfigMap]{AllNamespaces: true},
		inside:   []string{"team-a", "elsewhere"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			settings := validSettings()
			tc.settings(&settings)
			cms := kube.NewCache(ConfigMaps, tc.opts)
			_, err := kube.NewController(s, c, settings, Memcached, memcachedReconciler{},
				kube.Watches(cms, kube.MapFunc(func(metav1.Object) []kube.Key { return nil })))
			require.NoError(t, err)

			// A namespace it will never hold is reported before it syncs:
			// waiting wouldn't mend the read.
			if tc.want != "" {
				_, _, err = cms.Get("elsewhere", "flags")
				require.EqualError(t, err, tc.want)
				_, err = cms.List("elsewhere", nil)
				require.EqualError(t, err, tc.want)
			}
			for _, ns := range append(tc.inside, "") {
				_, err = cms.List(ns, nil)
				require.ErrorContains(t, err, "has not synced yet", "namespace %q", ns)
			}
		})
	}
}
