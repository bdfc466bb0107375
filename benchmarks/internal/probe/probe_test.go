package probe_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/benchmarks/internal/probe"
)

func TestChild_reports_when_started_and_when_told_converged(t *testing.T) {
	var reconciles atomic.Int64
	reconciles.Store(42)
	var out strings.Builder
	c := probe.Child{In: strings.NewReader("converged\n"), Out: &out, Reconciles: &reconciles}
	require.NoError(t, c.Start())
	require.NoError(t, c.Answer(), "returns once the harness ends its words")

	lines := bufio.NewScanner(strings.NewReader(out.String()))
	require.True(t, lines.Scan())
	var s probe.Started
	require.NoError(t, json.Unmarshal(lines.Bytes(), &s))
	require.NotEmpty(t, s.GoVersion)
	require.Positive(t, s.GOMAXPROCS)
	require.Positive(t, s.HeapBytes)
	require.True(t, lines.Scan())
	var r probe.Converged
	require.NoError(t, json.Unmarshal(lines.Bytes(), &r))
	require.Equal(t, int64(42), r.Reconciles)
	require.Positive(t, r.HeapBytes)
	require.False(t, lines.Scan())

	out.Reset()
	reconciles.Store(7)
	counted := probe.Child{In: strings.NewReader("reconciles\nreconciles\n"), Out: &out, Reconciles: &reconciles}
	require.NoError(t, counted.Answer())
	require.Equal(t, "{\"reconciles\":7}\n{\"reconciles\":7}\n", out.String(), "a Count line for each word, and no heap")

	bad := probe.Child{In: strings.NewReader("stop\n"), Out: &out, Reconciles: &reconciles}
	require.EqualError(t, bad.Answer(), `probe: unexpected word "stop" from the harness`)
}
