package cachetest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/internal/cachecases"
	"github.com/loam-dev/loam/internal/sealed"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/cachetest"
)

func TestFill_reads_as_the_watched_cache_does(t *testing.T) {
	ns := [3]string{"team-a", "team-b", "team-c"}
	for _, cs := range cachecases.Cases(ns) {
		t.Run(cs.Name, func(t *testing.T) {
			c := kube.NewCache(cachecases.ConfigMaps, cs.Options)
			settings := kube.Settings{Name: cachecases.Controller, Namespaces: cs.Namespaces}
			cachetest.Fill(t, c, settings, cachecases.Objects(ns)...)
			cachecases.Check(t, c, cs)
			// Twice: each read is a copy, which Check changes.
			cachecases.Check(t, c, cs)
		})
	}
}

func TestFill_a_Cache_is_empty_again_once_the_test_ends(t *testing.T) {
	c := kube.NewCache(cachecases.ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	t.Run("fills", func(t *testing.T) {
		cachetest.Fill(t, c, kube.Settings{}, cachecases.Objects([3]string{"a", "b", "c"})...)
		_, found, err := c.Get("a", "web")
		require.NoError(t, err)
		require.True(t, found)
	})
	_, _, err := c.Get("a", "web")
	require.ErrorContains(t, err, "is watched by no Controller")
}

// An object the API server never holds is a mistake of the test's, not
// an object no read finds: Fill names each.
func TestFill_refuses_objects_outside_their_resource_s_scope(t *testing.T) {
	configMaps := kube.NewCache(cachecases.ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	_, err := configMaps.Snapshot(sealed.Token{}, kube.Settings{Namespace: "shop"}, []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "db"}},
	})
	require.ErrorContains(t, err, `object 0: "web" has no namespace, and configmaps is namespaced`)
	require.ErrorContains(t, err, `object 1: "db" has no namespace, and configmaps is namespaced`)

	namespaces := kube.NewCache(kube.Kind[corev1.Namespace]{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", Scope: kube.Cluster},
		kube.CacheOptions[corev1.Namespace]{})
	_, err = namespaces.Snapshot(sealed.Token{}, kube.Settings{}, []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop"}}})
	require.ErrorContains(t, err, `object 0: "shop" is in the namespace "shop", and namespaces is cluster-scoped`)
}
