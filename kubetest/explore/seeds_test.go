package explore

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

func TestSeeds(t *testing.T) {
	got, names, err := seeds(
		[]corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "flags", ResourceVersion: "7"}, Data: map[string]string{"m": "64"}}},
		[]corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "token"}, StringData: map[string]string{"t": "x"}}},
	)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"ConfigMap": {"flags"}, "Secret": {"token"}}, names)
	require.Equal(t, []seed{
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "flags"}, "data": map[string]any{"m": "64"}}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "token"}, "stringData": map[string]any{"t": "x"}}},
	}, got, "what the API server sets is left out")

	_, _, err = seeds(
		[]corev1.ConfigMap{{}, {ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default"}}},
		[]corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "Not_A_Name"}}},
	)
	require.ErrorContains(t, err, "explore.Config.ConfigMaps[0]: no name\n"+
		"explore.Config.ConfigMaps[2]: a second ConfigMap named a\n"+
		"explore.Config.ConfigMaps[3] b: namespace \"default\": leave it empty, each replay has a namespace of its own\n"+
		"explore.Config.Secrets[0]: name \"Not_A_Name\": ")
}

func TestReferences(t *testing.T) {
	crd, err := memcached.Resource("explore.loam.dev").CRD()
	require.NoError(t, err)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	names := map[string][]string{"ConfigMap": {"flags"}}

	refs, err := references(map[string]string{"image": "ConfigMap"}, &spec, names)
	require.NoError(t, err)
	require.Equal(t, map[string][]string{"image": {"flags"}}, refs)

	_, err = references(map[string]string{
		"image":      "Secret",
		"size":       "ConfigMap",
		"nowhere":    "ConfigMap",
		"image.more": "ConfigMap",
		"other":      "Deployment",
	}, &spec, names)
	require.EqualError(t, err, "explore.Config.References[\"image\"]: no Secret to name: give the Config's Secrets\n"+
		"explore.Config.References[\"image.more\"]: spec.image has no field \"more\"\n"+
		"explore.Config.References[\"nowhere\"]: spec has no field \"nowhere\"\n"+
		"explore.Config.References[\"other\"]: kind \"Deployment\": want ConfigMap or Secret\n"+
		"explore.Config.References[\"size\"]: spec.size is of type \"integer\", not a string")
}
