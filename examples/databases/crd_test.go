package databases

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// crdPath is the CRD's YAML, checked in for whatever deploys the
// controller to apply.
const crdPath = "deploy/crd.yaml"

// TestDatabaseCRD is the golden test of the CRD: it keeps deploy/crd.yaml
// true to the types. With -update, it rewrites the file.
func TestDatabaseCRD(t *testing.T) {
	crd, err := Database.CRD()
	require.NoError(t, err)
	got, err := yaml.Marshal(crd)
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile(crdPath, got, 0o644))
	}
	want, err := os.ReadFile(crdPath)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the CRD changed: run go test -run TestDatabaseCRD -update")
}
