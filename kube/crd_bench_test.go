package kube_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/loam-dev/loam/kube"
)

// Workload's spec holds a whole pod template: hundreds of fields, as big a
// spec as a controller's resource is likely to have.
type WorkloadSpec struct {
	Replicas int32                  `json:"replicas"`
	Template corev1.PodTemplateSpec `json:"template"`
}

var Workload = kube.Resource[WorkloadSpec, MemcachedStatus]{
	Group: "apps.example.com", Version: "v1", Kind: "Workload", Plural: "workloads", Scope: kube.Namespaced,
	Rules: []kube.TypeRules{kube.Rules(&status, kube.Field(&status.Conditions).ListMap("type"))},
}

func TestWorkload_a_pod_template_reflects_into_a_valid_CRD(t *testing.T) {
	crd, err := Workload.CRD()
	require.NoError(t, err)
	validateCRD(t, crd)
	containers := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["template"].Properties["spec"].Properties["containers"]
	require.Equal(t, "array", containers.Type)
	require.Contains(t, containers.Items.Schema.Properties, "image")
}

func BenchmarkResource_CRD(b *testing.B) {
	b.Run("Memcached", func(b *testing.B) {
		for b.Loop() {
			if _, err := Memcached.CRD(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("a pod template", func(b *testing.B) {
		for b.Loop() {
			if _, err := Workload.CRD(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
