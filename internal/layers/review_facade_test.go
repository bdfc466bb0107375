package layers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/internal/layers"
)

// Review: the facade rule refuses golang.org/x/sync because "errgroup
// starts goroutines without a go statement"; the standard library's
// time.AfterFunc and context.AfterFunc do exactly that too, each running
// its function in a goroutine of its own, and a facade file using them
// passes the check.
func TestReview_CheckFacade_finds_goroutines_started_without_a_go_statement(t *testing.T) {
	files := map[string]string{
		"kube/after.go": "package kube\n\nimport (\n\t\"context\"\n\t\"time\"\n)\n\n" +
			"func later(ctx context.Context) {\n" +
			"\ttime.AfterFunc(time.Second, func() { later(ctx) })\n" +
			"\tcontext.AfterFunc(ctx, func() {})\n" +
			"}\n",
	}
	found, err := layers.CheckFacade(writeTree(t, files), layers.Facade)
	require.NoError(t, err)
	require.Len(t, found, 2, "time.AfterFunc and context.AfterFunc each start a goroutine in the facade: %v", found)
}
