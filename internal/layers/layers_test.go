package layers_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/internal/layers"
)

// TestRepository_keeps_the_dependency_rules checks loam's own tree.
func TestRepository_keeps_the_dependency_rules(t *testing.T) {
	found, err := layers.Check(filepath.Join("..", ".."), layers.Module, layers.Rules())
	require.NoError(t, err)
	for _, v := range found {
		t.Error(v)
	}
}

// TestCheck_finds_every_broken_rule builds a tree whose packages break each
// rule, so the check above can't pass by finding nothing.
func TestCheck_finds_every_broken_rule(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"domain/bad/bad.go":        "package bad\nimport (\n_ \"net/http\"\n_ \"k8s.io/client-go/kubernetes\"\n_ \"github.com/loam-dev/loam/kube\"\n_ \"github.com/loam-dev/loam/adapters/informer\"\n_ \"github.com/loam-dev/loam/app\"\n_ \"os\"\n)\n",
		"domain/good/good.go":      "package good\nimport (\n_ \"context\"\n_ \"github.com/loam-dev/loam/ports\"\n_ \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n_ \"go.opentelemetry.io/otel/baggage\"\n)\n",
		"domain/good/good_test.go": "package good\nimport (\n_ \"github.com/stretchr/testify/require\"\n_ \"go.uber.org/mock/gomock\"\n_ \"go.uber.org/goleak\"\n)\n",
		"domain/bad/bad_test.go":   "package bad\nimport _ \"net/http/httptest\"\n",
		"domain/bad/mock.go":       "package bad\nimport _ \"go.uber.org/mock/gomock\"\n",
		"ports/ports.go":           "package ports\nimport _ \"github.com/loam-dev/loam/adapters/queue\"\n",
		"adapters/queue/queue.go":  "package queue\nimport _ \"github.com/loam-dev/loam/kube\"\n",
		"kube/kube.go":             "package kube\nimport _ \"sigs.k8s.io/controller-runtime/pkg/client\"\n",
		"app/app.go":               "package app\nimport _ \"github.com/loam-dev/loam/kube\"\n",
		"kube/bench.go":            "package kube\nimport _ \"github.com/loam-dev/loam/benchmarks/compare\"\n",
		"other/go.mod":             "module other\n",
		"other/x.go":               "package x\nimport _ \"sigs.k8s.io/controller-runtime\"\n",
		"testdata/x.go":            "package x\nimport _ \"sigs.k8s.io/controller-runtime\"\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	}

	found, err := layers.Check(root, layers.Module, layers.Rules())
	require.NoError(t, err)
	var got []string
	for _, v := range found {
		got = append(got, v.File+" "+v.Import)
	}
	require.ElementsMatch(t, []string{
		"domain/bad/bad.go net/http",
		"domain/bad/bad.go k8s.io/client-go/kubernetes",
		"domain/bad/bad.go github.com/loam-dev/loam/kube",
		"domain/bad/bad.go github.com/loam-dev/loam/adapters/informer",
		"domain/bad/bad.go github.com/loam-dev/loam/app",
		"domain/bad/bad.go os",
		"domain/bad/bad_test.go net/http/httptest",
		"domain/bad/mock.go go.uber.org/mock/gomock",
		"ports/ports.go github.com/loam-dev/loam/adapters/queue",
		"adapters/queue/queue.go github.com/loam-dev/loam/kube",
		"kube/kube.go sigs.k8s.io/controller-runtime/pkg/client",
		"app/app.go github.com/loam-dev/loam/kube",
		"kube/bench.go github.com/loam-dev/loam/benchmarks/compare",
	}, got)
}

func TestCheck_reports_a_file_it_cannot_parse(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "x.go"), []byte("package x\nimport \"unterminated\n"), 0o600))
	_, err := layers.Check(root, layers.Module, layers.Rules())
	require.ErrorContains(t, err, "parsing x.go")
}
