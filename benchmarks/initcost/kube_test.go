package initcost_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/benchmarks/initcost"
)

// What a program that imports kube may allocate in its packages'
// initialisation: the bytes are the same on every machine (a few hundred
// vary with map layouts), so these are bounds on behaviour, not speeds.
const (
	// kubeInitBytes bounds the whole: 2.3 MB once kube stopped linking
	// CEL (3.4 MB before), most of it client-go's scheme of every built-in
	// kind, which kube's typed Lease and CRD clients bring. Raise it only
	// for a dependency kube cannot do without, and say so.
	kubeInitBytes = 2_600_000
	// ownInitBytes bounds each of loam's own packages: a small map
	// literal, at most (domain/crd's two take 336 bytes); anything that
	// costs more — a regular expression (domain/crd's took 3 KB), a CEL
	// environment, a big table — is built on first use.
	ownInitBytes = 1024
)

func TestKube_initialises_nothing_expensive(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kube")
	require.NoError(t, initcost.Build(t.Context(), "..", "kube", bin))
	tr, err := initcost.Run(t.Context(), bin)
	require.NoError(t, err)
	require.Greater(t, len(tr.Packages), 100, "inittrace lists kube's packages")

	// Packages whose initialisation a program that imports kube must not
	// pay for at all, with why.
	expensive := map[string]string{
		"github.com/google/cel-go":                     "CEL, which only kube/webhookcel brings",
		"cel.dev/expr":                                 "CEL's protobuf types",
		"k8s.io/apiserver/pkg/cel":                     "the API server's CEL libraries",
		"k8s.io/kube-openapi/pkg/validation/strfmt":    "the API server's CEL libraries' formats (436 KB)",
		"google.golang.org/protobuf/reflect/protodesc": "CEL's descriptors (280 KB)",
	}

	for prefix, why := range expensive {
		for _, p := range tr.Under(prefix) {
			t.Errorf("%s initialises (%d bytes, %d allocs): %s", p.Path, p.Bytes, p.Allocs, why)
		}
	}
	for _, p := range tr.Under("github.com/loam-dev/loam") {
		require.LessOrEqual(t, p.Bytes, int64(ownInitBytes), "%s allocates when the program starts: build it on first use", p.Path)
	}
	require.LessOrEqual(t, tr.Bytes(), int64(kubeInitBytes), "kube's packages allocate at start; the most:\n%s", top(tr))
}

func top(tr initcost.Trace) string {
	var s string
	for _, p := range tr.Top(10) {
		s += fmt.Sprintf("%s: %d bytes\n", p.Path, p.Bytes)
	}
	return s
}
