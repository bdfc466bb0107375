package kube_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/kube"
)

// PoolSpec, PoolStatus and Pool are a resource that kubectl scale and a
// HorizontalPodAutoscaler can scale: its spec's replicas are the Scale's,
// and its status reports the replicas and the selector of its pods.
type PoolSpec struct {
	Replicas int32  `json:"replicas"`
	Image    string `json:"image"`
}

type PoolStatus struct {
	Replicas int32  `json:"replicas,omitempty"`
	Selector string `json:"selector,omitempty"`
}

var (
	poolSpec   PoolSpec
	poolStatus PoolStatus

	Pool = kube.Resource[PoolSpec, PoolStatus]{
		Group:   "pools.example.com",
		Version: "v1",
		Kind:    "Pool",
		Plural:  "pools",
		Scope:   kube.Namespaced,
		Rules: []kube.TypeRules{
			kube.Rules(&poolSpec, kube.Field(&poolSpec.Replicas).Minimum(0)),
			kube.Rules(&poolStatus),
		},
		Scale: kube.Scale(&poolSpec.Replicas, &poolStatus.Replicas).Selector(&poolStatus.Selector),
	}
)

// TestPoolCRD is the golden test of a CRD with the scale subresource: its
// paths, beside the status subresource, are the fields' JSON names.
func TestPoolCRD(t *testing.T) {
	crd, err := Pool.CRD()
	require.NoError(t, err)
	got, err := yaml.Marshal(crd)
	require.NoError(t, err)

	const path = "testdata/pool.yaml"
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	require.Contains(t, string(got), `    subresources:
      scale:
        labelSelectorPath: .status.selector
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
      status: {}
`)
}

func TestPoolCRD_is_valid_to_the_API_server(t *testing.T) {
	crd, err := Pool.CRD()
	require.NoError(t, err)
	validateCRD(t, crd)
}

// A Resource without Scale has no scale subresource, so /scale is not
// found, as before.
func TestResource_without_Scale_has_no_scale_subresource(t *testing.T) {
	r := Pool
	r.Scale = kube.ScaleSubresource{}
	crd, err := r.CRD()
	require.NoError(t, err)
	require.Nil(t, crd.Spec.Versions[0].Subresources.Scale)
	require.NotNil(t, crd.Spec.Versions[0].Subresources.Status)
}

// A Scale's mistakes are reported with the Resource's others, and those
// of a Version's Scale with its place.
func TestResource_CRD_reports_a_Scales_mistakes_with_every_other(t *testing.T) {
	type optionalSpec struct {
		Replicas *int32 `json:"replicas,omitempty"`
		Label    string `json:"label,string"`
	}
	var (
		spec  optionalSpec
		other string
	)
	r := kube.Resource[optionalSpec, PoolStatus]{
		Group: "pools.example.com", Version: "v1", Kind: "Pool", Scope: kube.Namespaced,
		Rules: []kube.TypeRules{kube.Rules(&spec), kube.Rules(&poolStatus)},
		Scale: kube.Scale(&spec.Replicas, &poolSpec.Replicas).Selector(&other),
	}
	_, err := r.CRD()
	require.Error(t, err)
	for _, want := range []string{
		"kube: the CRD of Pool: ",
		"Plural is missing",
		"Scale.SpecReplicas: is .spec.replicas, which may be missing, as it is optional and has no Default",
		"Scale.StatusReplicas: points into neither the value given to the Rules of kube_test.optionalSpec nor that of kube_test.PoolStatus",
		"Scale.Selector: points into neither",
	} {
		require.ErrorContains(t, err, want)
	}
}
