package kube_test

import (
	"flag"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
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
