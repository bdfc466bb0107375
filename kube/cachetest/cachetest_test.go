package cachetest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/loam-dev/loam/internal/cachecases"
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
