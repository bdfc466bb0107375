package oracle_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loam-dev/loam/kubetest/internal/memcached"
	"github.com/loam-dev/loam/kubetest/internal/oracle"
)

func object(generation int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "m", "generation": generation}}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func TestSettled_by_the_conditions_of_a_reflected_status(t *testing.T) {
	crd, err := memcached.Resource("oracle.loam.dev").CRD()
	require.NoError(t, err)
	settled, err := oracle.Settled(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	require.NoError(t, err)
	cond := func(observed int64) map[string]any {
		return map[string]any{"type": "Ready", "status": "True", "observedGeneration": observed}
	}
	require.Equal(t, "m: no status.conditions yet, generation 2", settled(object(2, nil)))
	require.Equal(t, "m: condition Ready observes generation 1, the object is at 2", settled(object(2, map[string]any{"conditions": []any{cond(1)}})))
	require.Empty(t, settled(object(2, map[string]any{"conditions": []any{cond(2)}})))
}

func TestSettled_by_status_observedGeneration(t *testing.T) {
	schema := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"observedGeneration": {Type: "integer"}}},
	}}
	settled, err := oracle.Settled(schema)
	require.NoError(t, err)
	require.Equal(t, "m: no status.observedGeneration yet, generation 3", settled(object(3, nil)))
	require.Equal(t, "m: status.observedGeneration 2, generation 3", settled(object(3, map[string]any{"observedGeneration": int64(2)})))
	require.Empty(t, settled(object(3, map[string]any{"observedGeneration": int64(3)})))
}

func TestSettled_refuses_a_status_with_no_observed_generation(t *testing.T) {
	schemas := []*apiextensionsv1.JSONSchemaProps{
		{Type: "object"},
		{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ready": {Type: "boolean"}}}}},
	}
	for _, schema := range schemas {
		_, err := oracle.Settled(schema)
		require.ErrorIs(t, err, oracle.ErrNoObservedGeneration)
	}
}

func TestChanged_names_every_key_whose_version_moved_or_that_came_or_went(t *testing.T) {
	got := oracle.Changed(map[string]string{"a": "1", "b": "2", "c": "3"}, map[string]string{"a": "1", "b": "5", "d": "6"})
	slices.Sort(got)
	require.Equal(t, []string{"b", "c", "d"}, got)
	require.Empty(t, oracle.Changed(map[string]string{"a": "1"}, map[string]string{"a": "1"}))
}
