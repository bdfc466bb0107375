package reconciled_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/internal/reconciled"
)

func TestWithObject_marks_the_context_and_those_made_from_it(t *testing.T) {
	_, ok := reconciled.FromContext(t.Context())
	require.False(t, ok, "an unmarked context")

	scenario, err := baggage.Parse("acme.fault=x")
	require.NoError(t, err)
	ctx := reconciled.WithObject(t.Context(), "uid-1", "acme.example.com/failure-scenario", scenario)
	child, cancel := context.WithCancel(ctx)
	defer cancel()

	got, ok := reconciled.FromContext(child)
	require.True(t, ok)
	require.Equal(t, reconciled.Object{UID: "uid-1", Annotation: "acme.example.com/failure-scenario", Scenario: scenario}, got)

	inner := reconciled.WithObject(child, "uid-2", "a", baggage.Baggage{})
	got, ok = reconciled.FromContext(inner)
	require.True(t, ok)
	require.Equal(t, "uid-2", string(got.UID), "the innermost mark stands")
}
