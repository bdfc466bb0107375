package layers_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/internal/layers"
)

// The standard library's time.AfterFunc and context.AfterFunc each run
// their function in a goroutine of their own, without a go statement: the
// facade rule finds them too, under any name the file gives the package.
func TestCheckFacade_finds_goroutines_started_without_a_go_statement(t *testing.T) {
	files := map[string]string{
		"kube/after.go": "package kube\n\nimport (\n\t\"context\"\n\tclock \"time\"\n)\n\n" +
			"func later(ctx context.Context) {\n" +
			"\tclock.AfterFunc(clock.Second, func() { later(ctx) })\n" +
			"\tcontext.AfterFunc(ctx, func() {})\n" +
			"}\n",
	}
	found, err := layers.CheckFacade(writeTree(t, files), layers.Facade)
	require.NoError(t, err)
	require.Len(t, found, 2, "time.AfterFunc and context.AfterFunc each start a goroutine in the facade: %v", found)
}
