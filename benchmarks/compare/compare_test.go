package compare_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/benchmarks/compare"
	"github.com/loam-dev/loam/kubetest"
)

// TestMain checks that a comparison leaves no goroutine behind: its
// watches, creators and children's pipes all end with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, kubetest.GoleakOptions()...)
}

// n is the tiny comparison's size: every mode settles n objects once.
const n = 200

// TestCompare runs every mode once, tiny, and checks that each settled
// every object with the writes it should: exactly the limit's two per
// object, and two to four per object from each controller, which
// reconciled every object at least once and counted those reconciles in
// its own /metrics, scraped once; and that loam's controller, restarted
// over the settled objects, reconciled each again with no write and no
// 409. It asserts no figure: those are for `make compare` on a quiet
// machine.
func TestCompare(t *testing.T) {
	res, err := compare.Run(t.Context(), compare.Config{
		N: n, Workers: 4, Repeats: 1, Restart: true,
		Environ: os.Environ(), //nolint:forbidigo // the controllers start from the test's environment, as from the command's
		Log:     t.Output(),
	})
	require.NoError(t, err)
	require.Len(t, res.Runs, len(compare.Modes))

	left := res.Runs[0].Left
	for _, r := range res.Runs {
		require.Equal(t, n, r.Settled, "%s: every object settled", r.Mode)
		require.Positive(t, r.Convergence, r.Mode)
		if r.Mode == compare.Limit {
			require.Equal(t, float64(2*n), r.Writes(), "the limit writes a ConfigMap and a status per object, exactly")
		} else {
			require.GreaterOrEqual(t, r.Writes(), float64(2*n), "%s writes at least a ConfigMap and a status per object", r.Mode)
			require.LessOrEqual(t, r.Writes(), float64(4*n), "%s writes at most twice that", r.Mode)
			require.GreaterOrEqual(t, r.Converged.Reconciles, int64(n), "%s reconciles every object", r.Mode)
			require.GreaterOrEqual(t, r.ScrapedReconciles, float64(n), "%s records its reconciles in its /metrics", r.Mode)
			require.Positive(t, r.PeakRSS, r.Mode)
		}
		require.Equal(t, left, r.Left, "%s: the store holds as many objects after each run", r.Mode)
		if r.Mode != compare.Loam {
			require.Nil(t, r.Restart, "%s isn't restarted", r.Mode)
			continue
		}
		require.NotNil(t, r.Restart, "loam's controller is restarted")
		require.GreaterOrEqual(t, r.Restart.Converged.Reconciles, int64(n), "the restarted controller reconciles every object again")
		require.Zero(t, r.Restart.Writes(), "a settled object costs no write on a restart's pass")
		require.Zero(t, r.Restart.Conflicts())
		require.Positive(t, r.Restart.Resync)
		require.Positive(t, r.Restart.PeakRSS)
	}

	var table strings.Builder
	require.NoError(t, res.Markdown(&table, "go test -run TestCompare"))
	t.Log("\n" + table.String())
	for _, f := range []string{"convergence (s)", "controller CPU (s)", "heap per object (B)", "peak RSS (MiB)", "reconciles/object", "writes/object", "409s", "API server CPU (s)"} {
		require.Contains(t, table.String(), "| "+f+" |")
	}
}
