package cachetest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/cachetest"
)

// sizes is the Cache a Reconciler reads its ConfigMaps from.
var sizes = kube.NewCache(kube.Kind[corev1.ConfigMap]{
	GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Scope: kube.Namespaced,
}, kube.CacheOptions[corev1.ConfigMap]{LabelSelector: "app=memcached"})

// The docs' example (docs/testing.md): a unit test fills the Cache as the
// Controller of settings would have, and reads it as a Reconciler does.
func TestFill_the_docs_example(t *testing.T) {
	settings := kube.Settings{Name: "memcached", Namespace: "shop"}
	cachetest.Fill(t, sizes, settings,
		corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop", Labels: map[string]string{"app": "memcached"}}, Data: map[string]string{"size": "3"}},
		corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled", Namespace: "shop"}},
	)
	cm, found, err := sizes.Get("shop", "shop")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "3", cm.Data["size"])
	_, found, err = sizes.Get("shop", "unlabelled")
	require.NoError(t, err)
	require.False(t, found, "outside the Cache's LabelSelector")
	_, _, err = sizes.Get("other", "shop")
	require.EqualError(t, err, `kube: Cache(/v1, Resource=configmaps): namespace "other" is outside the Cache, which holds namespace "shop" only, as Controller memcached's Settings.Namespace: set CacheOptions.Namespaces to the namespaces it reads, or CacheOptions.AllNamespaces to watch every namespace`)
}
