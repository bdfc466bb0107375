package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/benchmarks/internal/apimetrics"
	"github.com/loam-dev/loam/benchmarks/internal/probe"
)

// The harness's own helpers, which decide what its figures say.

func TestConfig_reports_every_mistake_and_rotates_the_modes(t *testing.T) {
	err := Config{N: 0, Workers: -1, Repeats: 1, Creators: 1, Timeout: time.Second, Modes: []Mode{Loam, "fast", Loam}}.check()
	require.EqualError(t, err, `compare: N is 0: want at least 1
compare: Workers is -1: want at least 1
compare: mode "fast": want limit, controller-runtime or loam
compare: mode "loam" twice`)

	cfg := Config{N: 1, Workers: 1, Repeats: 3}.withDefaults()
	require.NoError(t, cfg.check())
	require.Equal(t, []Mode{Limit, ControllerRuntime, Loam}, cfg.order(0))
	require.Equal(t, []Mode{ControllerRuntime, Loam, Limit}, cfg.order(1))
	require.Equal(t, []Mode{Loam, Limit, ControllerRuntime}, cfg.order(2))
	require.Equal(t, []Mode{Limit, ControllerRuntime, Loam}, cfg.order(3))
}

func TestControllerEnv_strips_the_Go_runtime_s_settings(t *testing.T) {
	env := ControllerEnv([]string{"PATH=/bin", "GOGC=50", "GOMEMLIMIT=1GiB", "GOMAXPROCS=1", "KUBECONFIG=/elsewhere", "GODEBUG=x=1", "GOGCX=1"}, "/tmp/kc")
	require.Equal(t, []string{"PATH=/bin", "GODEBUG=x=1", "GOGCX=1", "KUBECONFIG=/tmp/kc"}, env)
}

func TestMedian_and_format(t *testing.T) {
	require.Equal(t, 2.0, median([]float64{3, 1, 2}))
	require.Equal(t, 1.5, median([]float64{2, 1}))
	require.Equal(t, "1,234,568", format(1234567.8, 0))
	require.Equal(t, "-1,000", format(-1000, 0))
	require.Equal(t, "999", format(999, 0))
	require.Equal(t, "0.50", format(0.5, 2))
}

func TestResult_counts_the_writes_a_reconcile_makes(t *testing.T) {
	r := Result{Requests: apimetrics.Requests{
		{Verb: "APPLY", Resource: "configmaps", Code: "200"}:                                                 10,
		{Verb: "APPLY", Resource: "configmaps", Code: "201"}:                                                 5,
		{Verb: "APPLY", Group: "bench.loam.dev", Resource: "memcacheds", Subresource: "status", Code: "200"}: 10,
		{Verb: "PATCH", Group: "bench.loam.dev", Resource: "memcacheds", Subresource: "status", Code: "409"}: 2,
		{Verb: "POST", Group: "bench.loam.dev", Resource: "memcacheds", Code: "201"}:                         10,
		{Verb: "LIST", Group: "bench.loam.dev", Resource: "memcacheds", Code: "200"}:                         1,
		{Verb: "PUT", Group: "coordination.k8s.io", Resource: "leases", Code: "200"}:                         3,
		{Verb: "GET", Group: "coordination.k8s.io", Resource: "leases", Code: "200"}:                         3,
	}}
	require.Equal(t, 27.0, r.Writes(), "applies and patches of ConfigMaps and statuses, not the harness's creates")
	require.Equal(t, 2.0, r.Conflicts())
	require.Equal(t, 3.0, r.LeaseWrites())
}

func TestMarkdown_shows_medians_ratios_and_goals(t *testing.T) {
	run := func(m Mode, repeat int, conv time.Duration, cpu time.Duration, heap uint64) Result {
		return Result{
			Mode: m, Repeat: repeat, Settled: 10, Convergence: conv, ControllerCPU: cpu,
			Started:   probe.Started{GoVersion: "go1.27.3", OS: "linux", Arch: "amd64", GOMAXPROCS: 2, GOGC: 100, MemoryLimit: 1<<63 - 1, HeapBytes: 1000},
			Converged: probe.Converged{HeapBytes: 1000 + heap, Reconciles: 20},
			PeakRSS:   64 << 20,
			Requests: apimetrics.Requests{
				{Verb: "APPLY", Resource: "configmaps", Code: "200"}:                                                 10,
				{Verb: "APPLY", Group: "bench.loam.dev", Resource: "memcacheds", Subresource: "status", Code: "200"}: 10,
			},
		}
	}
	res := &Results{
		Config: Config{N: 10, Workers: 4, Repeats: 2, Creators: 16, Environ: []string{"GODEBUG=madvdontneed=1"}},
		Runs: []Result{
			run(Limit, 1, time.Second, 0, 0),
			run(ControllerRuntime, 1, 4*time.Second, 2*time.Second, 40000),
			run(Loam, 1, 3*time.Second, time.Second, 10000),
			run(ControllerRuntime, 2, 2*time.Second, 2*time.Second, 40000),
			run(Loam, 2, 3*time.Second, time.Second, 30000),
			run(Limit, 2, 2*time.Second, 0, 0),
		},
	}
	var b strings.Builder
	require.NoError(t, res.Markdown(&b, "compare -n 10"))
	out := b.String()
	require.Contains(t, out, "| convergence (s) | 1.50 (1.00–2.00) | 3.00 (2.00–4.00) | 3.00 (3.00–3.00) | 1.00 |")
	require.Contains(t, out, "| controller CPU (s) | — | 2.00 (2.00–2.00) | 1.00 (1.00–1.00) | 0.50 |")
	require.Contains(t, out, "| heap per object (B) | — | 4,000 (4,000–4,000) | 2,000 (1,000–3,000) | 0.50 |")
	require.Contains(t, out, "- controller CPU ≤ 0.5×: 0.50×, met")
	require.Contains(t, out, "- convergence ≤ 0.95×: 1.00×, missed")
	require.Contains(t, out, "Command: `compare -n 10`")
	require.Contains(t, out, "Go environment of both controllers: go1.27.3 linux/amd64, GOMAXPROCS 2, GOGC 100, no memory limit.")
	require.Contains(t, out, `GODEBUG is "madvdontneed=1"`)
	require.Contains(t, out, "| APPLY configmaps | 1.000 | 1.000 | 1.000 |")
}
