package kube_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/kube"
)

func TestResource_GVR_names_the_group_version_and_plural(t *testing.T) {
	require.Equal(t, schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}, Memcached.GVR())
}

// Release's status, for columns of nested and promoted fields.
type ReleaseStatus struct {
	Observed `json:",inline"`
	Rollout  Rollout     `json:"rollout"`
	Since    metav1.Time `json:"since,omitempty"`
	Healthy  bool        `json:"healthy"`
	Ratio    float64     `json:"ratio"`
	Weird    string      `json:"weird.name"`
	Labels   []string    `json:"labels,omitempty"`
}

type Observed struct {
	ObservedGeneration int64 `json:"observedGeneration"`
}

type Rollout struct {
	Phase Phase `json:"phase"`
	Step  int32 `json:"step"`
}

var (
	release       Release
	releaseStatus ReleaseStatus
)

func TestResource_CRD_has_names_columns_short_names_and_categories(t *testing.T) {
	r := kube.Resource[Release, ReleaseStatus]{
		Group:      "apps.example.com",
		Version:    "v1",
		Kind:       "Release",
		Plural:     "releases",
		Scope:      kube.Cluster,
		ShortNames: []string{"rel"},
		Categories: []string{"all", "example"},
		Rules: []kube.TypeRules{
			kube.Schema(&version, apiextensionsv1.JSONSchemaProps{Type: "string"}),
			kube.Rules(&release),
			kube.Rules(&releaseStatus),
		},
		Columns: []kube.PrinterColumn{
			kube.Column("Version", &release.Version).Description("The version released."),
			kube.Column("Phase", &releaseStatus.Rollout.Phase),
			kube.Column("Step", &releaseStatus.Rollout.Step).Priority(1),
			kube.Column("Generation", &releaseStatus.ObservedGeneration),
			kube.Column("Since", &releaseStatus.Since),
			kube.Column("Healthy", &releaseStatus.Healthy),
			kube.Column("Ratio", &releaseStatus.Ratio),
			kube.Column("Weird", &releaseStatus.Weird),
			kube.Column("Labels", &releaseStatus.Labels),
		},
	}
	crd, err := r.CRD()
	require.NoError(t, err)
	validateCRD(t, crd)

	crd.Spec.Versions[0].Schema = nil
	got, err := yaml.Marshal(crd.Spec)
	require.NoError(t, err)
	require.Equal(t, `group: apps.example.com
names:
  categories:
  - all
  - example
  kind: Release
  listKind: ReleaseList
  plural: releases
  shortNames:
  - rel
  singular: release
scope: Cluster
versions:
- additionalPrinterColumns:
  - description: The version released.
    jsonPath: .spec.version
    name: Version
    type: string
  - jsonPath: .status.rollout.phase
    name: Phase
    type: string
  - format: int32
    jsonPath: .status.rollout.step
    name: Step
    priority: 1
    type: integer
  - format: int64
    jsonPath: .status.observedGeneration
    name: Generation
    type: integer
  - jsonPath: .status.since
    name: Since
    type: date
  - jsonPath: .status.healthy
    name: Healthy
    type: boolean
  - jsonPath: .status.ratio
    name: Ratio
    type: number
  - jsonPath: .status['weird.name']
    name: Weird
    type: string
  - jsonPath: .status.labels
    name: Labels
    type: string
  - jsonPath: .metadata.creationTimestamp
    name: Age
    type: date
  name: v1
  served: true
  storage: true
  subresources:
    status: {}
`, string(got))
	require.Equal(t, "releases.apps.example.com", crd.Name)
	require.Equal(t, "apiextensions.k8s.io/v1", crd.APIVersion)
	require.Equal(t, "CustomResourceDefinition", crd.Kind)

	t.Run("an Age column of one's own replaces kubectl's", func(t *testing.T) {
		r.Columns = []kube.PrinterColumn{kube.Column("Age", &releaseStatus.Since)}
		crd, err := r.CRD()
		require.NoError(t, err)
		require.Equal(t, []apiextensionsv1.CustomResourceColumnDefinition{
			{Name: "Age", Type: "date", JSONPath: ".status.since"},
		}, crd.Spec.Versions[0].AdditionalPrinterColumns)
	})
	t.Run("the CRD shares no slice with the Resource", func(t *testing.T) {
		crd, err := r.CRD()
		require.NoError(t, err)
		crd.Spec.Names.ShortNames[0] = "changed"
		crd.Spec.Names.Categories[0] = "changed"
		require.Equal(t, []string{"rel"}, r.ShortNames)
		require.Equal(t, []string{"all", "example"}, r.Categories)
	})
}

func TestResource_CRD_root_has_the_objects_fields_and_a_required_spec(t *testing.T) {
	crd, err := Memcached.CRD()
	require.NoError(t, err)
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	require.Equal(t, "object", root.Type)
	require.Equal(t, []string{"spec"}, root.Required)
	require.Equal(t, apiextensionsv1.JSONSchemaProps{Type: "string"}, root.Properties["apiVersion"])
	require.Equal(t, apiextensionsv1.JSONSchemaProps{Type: "string"}, root.Properties["kind"])
	require.Equal(t, apiextensionsv1.JSONSchemaProps{Type: "object"}, root.Properties["metadata"])
	require.Len(t, root.Properties, 5)
	v := crd.Spec.Versions[0]
	require.True(t, v.Served)
	require.True(t, v.Storage)
	require.Equal(t, &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}, v.Subresources)
	require.Len(t, crd.Spec.Versions, 1)
}
