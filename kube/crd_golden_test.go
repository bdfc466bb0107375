package kube_test

import (
	"flag"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/kube"
)

// MemcachedSpec, MemcachedStatus and Memcached are the spec's example
// resource, as an end user declares it.
type MemcachedSpec struct {
	Size  int32  `json:"size"`
	Image string `json:"image"`
}

type MemcachedStatus struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

var (
	spec   MemcachedSpec
	status MemcachedStatus

	Memcached = kube.Resource[MemcachedSpec, MemcachedStatus]{
		Group:      "cache.example.com",
		Version:    "v1alpha1",
		Kind:       "Memcached",
		Plural:     "memcacheds",
		Scope:      kube.Namespaced,
		ShortNames: []string{"mc"},
		Categories: []string{"all"},
		Columns: []kube.PrinterColumn{
			kube.Column("Size", &spec.Size),
			kube.Column("Ready", &status.ReadyReplicas),
			kube.ConditionColumn("Available", &status.Conditions, "Available"),
		},
		Rules: []kube.TypeRules{
			kube.Rules(&spec,
				kube.Field(&spec.Size).Minimum(1).Maximum(3).Description("How many memcached pods run."),
				kube.Field(&spec.Image).Pattern(regexp.MustCompile(`^memcached:`)).Default("memcached:1.6.26-alpine3.19"),
			),
			kube.Rules(&status,
				kube.Field(&status.Conditions).ListMap("type"),
			),
		},
	}
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestMemcachedCRD is the golden test the spec gives an end user: the CRD's
// YAML is checked in, and the test keeps it true to the types. With
// -update, it rewrites the file.
func TestMemcachedCRD(t *testing.T) {
	crd, err := Memcached.CRD()
	require.NoError(t, err)
	got, err := yaml.Marshal(crd)
	require.NoError(t, err)

	const path = "testdata/memcached.yaml"
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// memcachedSpecYAML is Memcached's spec schema exactly as the spec prints
// it, from the golden file.
const memcachedSpecYAML = `spec:
  properties:
    image:
      default: memcached:1.6.26-alpine3.19
      pattern: '^memcached:'
      type: string
    size:
      description: How many memcached pods run.
      format: int32
      maximum: 3
      minimum: 1
      type: integer
  required:
  - size
  type: object
`

func TestMemcachedCRD_spec_is_the_specs_YAML_byte_for_byte(t *testing.T) {
	crd, err := Memcached.CRD()
	require.NoError(t, err)
	s := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	got, err := yaml.Marshal(map[string]any{"spec": s})
	require.NoError(t, err)
	require.Equal(t, memcachedSpecYAML, string(got))
}

// BackupSpec and BackupStatus have required fields that encoding/json
// writes as null when they are nil or zero: a slice, a map, a pointer and
// a metav1.Time without omitempty. Their golden CRD shows them nullable,
// and still required; the fields with omitempty are neither.
type BackupSpec struct {
	Schedule string            `json:"schedule"`
	Targets  []string          `json:"targets"`
	Labels   map[string]string `json:"labels"`
	Retain   *int32            `json:"retain,omitempty"`
}

type BackupStatus struct {
	Snapshots []string    `json:"snapshots"`
	Latest    *string     `json:"latest"`
	LastRun   metav1.Time `json:"lastRun"`
	Failures  []string    `json:"failures,omitempty"`
}

var Backup = kube.Resource[BackupSpec, BackupStatus]{
	Group:   "backup.example.com",
	Version: "v1",
	Kind:    "Backup",
	Plural:  "backups",
	Scope:   kube.Namespaced,
}

// TestBackupCRD is a golden test of what a nil becomes: a required field
// that may encode as null is nullable, so the API server keeps the null
// rather than prune it and then reject the object for want of the field.
func TestBackupCRD(t *testing.T) {
	crd, err := Backup.CRD()
	require.NoError(t, err)
	got, err := yaml.Marshal(crd)
	require.NoError(t, err)

	const path = "testdata/backup.yaml"
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// MemcachedV1Spec is what Memcached's v1 declares: v1alpha1's size,
// renamed replicas, and its image.
type MemcachedV1Spec struct {
	Replicas int32  `json:"replicas"`
	Image    string `json:"image"`
}

// MemcachedV1beta1Spec is v1's spec under another Go name, as an older
// package of the same schema keeps it.
type MemcachedV1beta1Spec struct {
	Replicas int32  `json:"replicas"`
	Image    string `json:"image"`
}

var (
	specV1        MemcachedV1Spec
	statusV1      MemcachedStatus
	specV1beta1   MemcachedV1beta1Spec
	statusV1beta1 MemcachedStatus

	// MemcachedV1beta1 is served still, deprecated, and converted by
	// apiVersion alone: its schema is v1's.
	MemcachedV1beta1 = kube.Resource[MemcachedV1beta1Spec, MemcachedStatus]{
		Group: "cache.example.com", Version: "v1beta1", Kind: "Memcached", Plural: "memcacheds", Scope: kube.Namespaced,
		Deprecated:         true,
		DeprecationWarning: "cache.example.com/v1beta1 Memcached is deprecated; use cache.example.com/v1",
		Columns:            []kube.PrinterColumn{kube.Column("Replicas", &specV1beta1.Replicas)},
		Rules: []kube.TypeRules{
			kube.Rules(&specV1beta1, kube.Field(&specV1beta1.Replicas).Minimum(1).Maximum(3)),
			kube.Rules(&statusV1beta1, kube.Field(&statusV1beta1.Conditions).ListMap("type")),
		},
	}

	// MemcachedV1 is the hub: the version stored, with v1alpha1
	// (Memcached) converted by the webhook, and v1beta1 by apiVersion.
	MemcachedV1 = kube.Resource[MemcachedV1Spec, MemcachedStatus]{
		Group:      "cache.example.com",
		Version:    "v1",
		Kind:       "Memcached",
		Plural:     "memcacheds",
		Scope:      kube.Namespaced,
		ShortNames: []string{"mc"},
		Categories: []string{"all"},
		Columns: []kube.PrinterColumn{
			kube.Column("Replicas", &specV1.Replicas),
			kube.ConditionColumn("Available", &statusV1.Conditions, "Available"),
		},
		Rules: []kube.TypeRules{
			kube.Rules(&specV1, kube.Field(&specV1.Replicas).Minimum(1).Maximum(3)),
			kube.Rules(&statusV1, kube.Field(&statusV1.Conditions).ListMap("type")),
		},
		Versions: []kube.Version{
			kube.Spoke(Memcached, memcachedToV1, memcachedFromV1),
			kube.Unconverted(MemcachedV1beta1),
		},
		Conversion: &kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "memcached-webhooks"}},
	}
)

// memcachedToV1 converts v1alpha1 to v1: size is replicas.
func memcachedToV1(from kube.Object[MemcachedSpec, MemcachedStatus], to *kube.Object[MemcachedV1Spec, MemcachedStatus]) error {
	to.Spec = MemcachedV1Spec{Replicas: from.Spec.Size, Image: from.Spec.Image}
	to.Status = from.Status
	return nil
}

// memcachedFromV1 converts v1 to v1alpha1.
func memcachedFromV1(from kube.Object[MemcachedV1Spec, MemcachedStatus], to *kube.Object[MemcachedSpec, MemcachedStatus]) error {
	to.Spec = MemcachedSpec{Size: from.Spec.Replicas, Image: from.Spec.Image}
	to.Status = from.Status
	return nil
}

// TestMemcachedV1CRD is the golden test of a CRD of three versions: the
// hub, a Spoke and an Unconverted, with the conversion webhook.
func TestMemcachedV1CRD(t *testing.T) {
	crd, err := MemcachedV1.CRD()
	require.NoError(t, err)
	got, err := yaml.Marshal(crd)
	require.NoError(t, err)

	const path = "testdata/memcached-versions.yaml"
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// TestMemcachedV1CRD_is_one_the_API_server_creates runs the API server's
// own validation of a CRD on the versioned CRDs: the webhook's, and
// None's when every other version is Unconverted.
func TestMemcachedV1CRD_is_one_the_API_server_creates(t *testing.T) {
	none := MemcachedV1
	none.Versions = []kube.Version{kube.Unconverted(MemcachedV1beta1)}
	none.Conversion = nil
	byURL := MemcachedV1
	byURL.Conversion = &kube.WebhookClient{URL: "https://127.0.0.1:9443/hooks", CABundle: []byte("not checked here")}
	unserved := none
	unserved.Unserved = true
	for name, r := range map[string]kube.Resource[MemcachedV1Spec, MemcachedStatus]{
		"webhook by Service": MemcachedV1, "webhook by URL": byURL, "None": none, "the hub unserved": unserved,
	} {
		t.Run(name, func(t *testing.T) {
			crd, err := r.CRD()
			require.NoError(t, err)
			// As the API server does before it validates: the Service's
			// port becomes 443.
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
			validateCRD(t, crd)
		})
	}
	crd, err := byURL.CRD()
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:9443/hooks/convert/cache.example.com/memcacheds", *crd.Spec.Conversion.Webhook.ClientConfig.URL)
}
