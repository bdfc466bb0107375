package proc_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/benchmarks/internal/proc"
)

func TestProc_reads_this_process(t *testing.T) {
	busy := 0
	for i := range 50_000_000 { // some CPU time to read back
		busy += i % 7
	}
	require.Positive(t, busy)
	pid := os.Getpid()
	cpu, err := proc.CPU(pid)
	require.NoError(t, err)
	require.Positive(t, cpu)
	self, err := proc.SelfCPU()
	require.NoError(t, err)
	require.Positive(t, self)

	rss, err := proc.PeakRSS(pid)
	require.NoError(t, err)
	require.Greater(t, rss, uint64(1<<20))
	require.True(t, proc.Running(pid))

	_, err = proc.CPU(-1)
	require.Error(t, err)
	require.False(t, proc.Running(-1))
}
