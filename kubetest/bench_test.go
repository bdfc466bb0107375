package kubetest_test

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest"
)

// BenchmarkStart starts and stops a cluster, and reports how long it took
// to be ready (readyz, the default namespace) and to stop, and the peak
// resident memory of the process while it ran.
//
//	go test -run '^$' -bench Start -benchtime 5x
func BenchmarkStart(b *testing.B) {
	for _, bench := range []struct {
		name string
		opts []kubetest.Option
	}{
		{"APIServer", nil},
		{"WithControllerManager", []kubetest.Option{kubetest.WithControllerManager()}},
	} {
		b.Run(bench.name, func(b *testing.B) {
			resetPeakRSS(b)
			var toReady, toStop time.Duration
			for b.Loop() {
				started := time.Now()
				c, err := kubetest.Run(b.Context(), bench.opts...)
				require.NoError(b, err)
				toReady += time.Since(started)
				rememberAddress(c)

				stopping := time.Now()
				require.NoError(b, c.Stop(b.Context()))
				toStop += time.Since(stopping)
			}
			b.ReportMetric(float64(toReady.Milliseconds())/float64(b.N), "ms-to-ready/op")
			b.ReportMetric(float64(toStop.Milliseconds())/float64(b.N), "ms-to-stop/op")
			b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-RSS-MiB")
		})
	}
}

// resetPeakRSS sets the kernel's record of the process's peak resident
// memory (VmHWM) back to the current resident memory.
func resetPeakRSS(b *testing.B) {
	b.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS on this system: %v", err)
	}
}

// peakRSS returns VmHWM, the process's peak resident memory in bytes.
func peakRSS(b *testing.B) int64 {
	b.Helper()
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	scanner := bufio.NewScanner(bytes.NewReader(status))
	for scanner.Scan() {
		value, ok := strings.CutPrefix(scanner.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
		require.NoError(b, err)
		return kib << 10
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
