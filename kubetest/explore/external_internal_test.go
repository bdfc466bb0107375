package explore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/kubetest/internal/generate"
)

func TestExplorer_external(t *testing.T) {
	spec := map[string]any{"name": "a", "nested": map[string]any{"n": int64(1)}}
	step := generate.Step{Op: generate.Update, Name: "explore-0", Spec: spec}

	e := &explorer{}
	require.Equal(t, step, e.external("ns", step), "without External.Spec, the step is written as generated")

	e.externalSpec = func(namespace, name string, spec map[string]any) {
		spec["name"] = namespace + "-" + name + "-" + spec["name"].(string)
		spec["nested"].(map[string]any)["n"] = int64(2)
	}
	got := e.external("ns", step)
	require.Equal(t, map[string]any{"name": "ns-explore-0-a", "nested": map[string]any{"n": int64(2)}}, got.Spec)
	require.Equal(t, map[string]any{"name": "a", "nested": map[string]any{"n": int64(1)}}, spec,
		"the sequence's own spec, reported and kept, is left as generated")

	del := generate.Step{Op: generate.Delete, Name: "explore-0"}
	require.Equal(t, del, e.external("ns", del), "a delete has no spec to change")
}

func TestExplorer_checkGone(t *testing.T) {
	var namespaces []string
	check := func(err error) Invariant {
		return Invariant{Name: "gone", Check: func(_ context.Context, _ dynamic.Interface, ns string) error {
			namespaces = append(namespaces, ns)
			return err
		}}
	}
	e := &explorer{}
	require.NoError(t, e.checkGone(t.Context(), "ns"), "no Gone, nothing to check")

	e.gone = []Invariant{check(nil), check(errors.New("a database is left")), check(errors.New("a role is left"))}
	err := e.checkGone(t.Context(), "ns")
	require.EqualError(t, err, "invariant \"gone\": a database is left\ninvariant \"gone\": a role is left", "every one is checked, and every failure reported")
	require.Equal(t, []string{"ns", "ns", "ns"}, namespaces)
}
