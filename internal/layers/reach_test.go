package layers_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/internal/layers"
)

// TestRepository_kube_reaches_no_process_global lists kube's whole import
// graph, every module's packages in it, and checks the ReachRules.
func TestRepository_kube_reaches_no_process_global(t *testing.T) {
	g, err := layers.ImportGraph(t.Context(), filepath.Join("..", ".."), "./"+layers.Facade)
	require.NoError(t, err)
	require.Contains(t, g, layers.Module+"/"+layers.Facade, "go list named kube otherwise")
	for _, v := range layers.CheckReach(g, layers.ReachRules()) {
		t.Error(v)
	}
}

func TestCheckReach_finds_a_forbidden_package_however_deep(t *testing.T) {
	kube := layers.Module + "/kube"
	g := layers.Graph{
		kube:                                 {"fmt", layers.Module + "/adapters/celcheck", "k8s.io/client-go/rest"},
		layers.Module + "/adapters/celcheck": {"k8s.io/apiserver/pkg/admission/plugin/cel", "github.com/google/cel-go/cel"},
		"k8s.io/apiserver/pkg/admission/plugin/cel": {"k8s.io/apiserver/pkg/admission", "k8s.io/apiserver/pkg/util/feature"},
		"k8s.io/apiserver/pkg/util/feature":         {"k8s.io/component-base/featuregate"},
		"k8s.io/client-go/rest":                     {"k8s.io/component-base/metrics/legacyregistry", "fmt"},
		// A name that only starts like a denied one is not below it.
		"github.com/google/cel-go/cel": {"k8s.io/apiserver/pkg/admissionfoo"},
		// Not reached from kube.
		"k8s.io/other": {"k8s.io/component-base/featuregate/testing"},
	}
	var got []string
	// The first rule, the process globals'; the second, CEL's, is below.
	for _, v := range layers.CheckReach(g, layers.ReachRules()[:1]) {
		got = append(got, v.String())
	}
	why := layers.ReachRules()[0].Why
	require.Equal(t, []string{
		// The walk stops at admission/plugin/cel: what it imports is its
		// own, so neither admission nor util/feature shows again.
		kube + " → " + layers.Module + "/adapters/celcheck → k8s.io/apiserver/pkg/admission/plugin/cel: " + why,
		kube + " → k8s.io/client-go/rest → k8s.io/component-base/metrics/legacyregistry: " + why,
	}, got)
}

func TestReachRules_keep_cel_out_of_kube(t *testing.T) {
	kube := layers.Module + "/kube"
	celcheck := layers.Module + "/adapters/celcheck"
	rules := layers.ReachRules()[1:]
	found := layers.CheckReach(layers.Graph{
		kube:     {"fmt", celcheck},
		celcheck: {"github.com/google/cel-go/cel", "k8s.io/apiserver/pkg/cel/library"},
	}, rules)
	require.Len(t, found, 1, "the walk stops at celcheck")
	require.Equal(t, []string{kube, celcheck}, found[0].Chain)

	found = layers.CheckReach(layers.Graph{
		kube:                                    {"k8s.io/client-go/tools/x"},
		"k8s.io/client-go/tools/x":              {"github.com/google/cel-go/common/types"},
		layers.Module + "/kube/webhookcel":      {kube, celcheck},
		"github.com/google/cel-go/common/types": {"cel.dev/expr"},
	}, rules)
	require.Len(t, found, 1, "kube reaches cel-go through a dependency; kube/webhookcel may")
	require.Equal(t, "github.com/google/cel-go/common/types", found[0].Chain[2])
}

func TestCheckReach_takes_the_shortest_chain(t *testing.T) {
	g := layers.Graph{
		"a": {"b", "c"},
		"b": {"d"},
		"d": {"x/bad"},
		"c": {"x/bad/sub"},
	}
	found := layers.CheckReach(g, []layers.ReachRule{{From: "a", Why: "w", Deny: []string{"x/bad"}}})
	require.Len(t, found, 2)
	require.Equal(t, []string{"a", "b", "d", "x/bad"}, found[0].Chain)
	require.Equal(t, []string{"a", "c", "x/bad/sub"}, found[1].Chain)
	require.Empty(t, layers.CheckReach(g, []layers.ReachRule{{From: "absent", Deny: []string{"x/bad"}}}))
}

func TestImportGraph_reports_what_go_list_says(t *testing.T) {
	_, err := layers.ImportGraph(t.Context(), t.TempDir(), "./nothing-here")
	require.ErrorContains(t, err, "go list -deps ./nothing-here")
}
