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
compare: mode "fast": want limit, controller-runtime, controller-runtime-tuned or loam
compare: mode "loam" twice`)

	err = Config{N: 1, Workers: 1, Repeats: 1, Creators: 1, Timeout: time.Second, Modes: []Mode{Limit}, Restart: true}.check()
	require.EqualError(t, err, "compare: Restart restarts loam's controller, and mode loam doesn't run")

	cfg := Config{N: 1, Workers: 1, Repeats: 4}.withDefaults()
	require.NoError(t, cfg.check())
	require.Equal(t, []Mode{Limit, ControllerRuntime, ControllerRuntimeTuned, Loam}, cfg.order(0))
	require.Equal(t, []Mode{ControllerRuntime, ControllerRuntimeTuned, Loam, Limit}, cfg.order(1))
	require.Equal(t, []Mode{ControllerRuntimeTuned, Loam, Limit, ControllerRuntime}, cfg.order(2))
	require.Equal(t, []Mode{Loam, Limit, ControllerRuntime, ControllerRuntimeTuned}, cfg.order(3))
	require.Equal(t, []Mode{Limit, ControllerRuntime, ControllerRuntimeTuned, Loam}, cfg.order(4))
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
			Started:           probe.Started{GoVersion: "go1.27.3", OS: "linux", Arch: "amd64", GOMAXPROCS: 2, GOGC: 100, MemoryLimit: 1<<63 - 1, HeapBytes: 1000},
			Converged:         probe.Converged{HeapBytes: 1000 + heap, Reconciles: 20},
			PeakRSS:           64 << 20,
			ScrapedReconciles: 20,
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
			run(ControllerRuntimeTuned, 1, 3*time.Second, 1500*time.Millisecond, 8000),
			run(Loam, 1, 3*time.Second, time.Second, 10000),
			run(ControllerRuntime, 2, 2*time.Second, 2*time.Second, 40000),
			run(ControllerRuntimeTuned, 2, 3*time.Second, 1500*time.Millisecond, 8000),
			run(Loam, 2, 3*time.Second, time.Second, 30000),
			run(Limit, 2, 2*time.Second, 0, 0),
		},
	}
	var b strings.Builder
	require.NoError(t, res.Markdown(&b, "compare -n 10"))
	out := b.String()
	require.Contains(t, out, "| figure | limit | controller-runtime | controller-runtime-tuned | loam | loam/CR | loam/CR-tuned |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	require.Contains(t, out, "| convergence (s) | 1.50 (1.00–2.00) | 3.00 (2.00–4.00) | 3.00 (3.00–3.00) | 3.00 (3.00–3.00) | 1.00 | 1.00 |")
	require.Contains(t, out, "| controller CPU (s) | — | 2.00 (2.00–2.00) | 1.50 (1.50–1.50) | 1.00 (1.00–1.00) | 0.50 | 0.67 |")
	require.Contains(t, out, "| heap per object (B) | — | 4,000 (4,000–4,000) | 800 (800–800) | 2,000 (1,000–3,000) | 0.50 | 2.50 |")
	require.Contains(t, out, "- controller CPU ≤ 0.5×: 0.50× controller-runtime, met; 0.67× controller-runtime-tuned, missed")
	require.Contains(t, out, "- convergence ≤ 0.95×: 1.00× controller-runtime, missed; 1.00× controller-runtime-tuned, missed")
	require.Contains(t, out, "Command: `compare -n 10`")
	require.Contains(t, out, "Go environment of both controllers: go1.27.3 linux/amd64, GOMAXPROCS 2, GOGC 100, no memory limit.")
	require.Contains(t, out, `GODEBUG is "madvdontneed=1"`)
	require.Contains(t, out, "| request | limit | controller-runtime | controller-runtime-tuned | loam |\n| --- | ---: | ---: | ---: | ---: |\n")
	require.Contains(t, out, "| APPLY configmaps | 1.000 | 1.000 | 1.000 | 1.000 |")
	require.Contains(t, out, "| 1 | limit | 1.00 | — |", "the limit has no controller's figures")
	require.Contains(t, out, " | 0 | — | 20 |\n", "a controller's run shows the reconciles its /metrics counted")

	b.Reset()
	res.Runs = res.Runs[:3] // no controller-runtime-tuned, no loam
	require.NoError(t, res.Markdown(&b, "compare -n 10"))
	require.Contains(t, b.String(), "- heap per object ≤ 0.5×: not measured against controller-runtime; not measured against controller-runtime-tuned")
}

func TestMarkdown_shows_loam_s_restarts(t *testing.T) {
	res := &Results{Config: Config{N: 10, Workers: 4, Repeats: 1}, Runs: []Result{{Mode: Limit, Repeat: 1}}}
	var b strings.Builder
	require.NoError(t, res.Markdown(&b, "compare -n 10"))
	require.NotContains(t, b.String(), "loam's restart", "no section when nothing restarted")

	res.Runs = append(res.Runs, Result{Mode: Loam, Repeat: 1, Restart: &Restart{
		Resync: 1500 * time.Millisecond, Leader: 250 * time.Millisecond, CPU: 2 * time.Second,
		PeakRSS: 40 << 20, LeaderRSS: 20 << 20,
		Started:   probe.Started{HeapBytes: 1000},
		Converged: probe.Converged{HeapBytes: 21000, Reconciles: 12},
		Requests: apimetrics.Requests{
			{Verb: "APPLY", Group: "bench.loam.dev", Resource: "memcacheds", Subresource: "status", Code: "200"}: 3,
			{Verb: "APPLY", Resource: "configmaps", Code: "409"}:                                                 1,
			{Verb: "LIST", Group: "bench.loam.dev", Resource: "memcacheds", Code: "200"}:                         1,
			{Verb: "PUT", Group: "coordination.k8s.io", Resource: "leases", Code: "200"}:                         2,
		},
	}})
	b.Reset()
	require.NoError(t, res.Markdown(&b, "compare -n 10 -restart"))
	require.Contains(t, b.String(), "| 1 | 1.50 | 0.25 | 1.20 | 4 | 1 | 2.00 | 2,000 | 40.0 | 20.0 |\n",
		"the restart's writes count its status and ConfigMap applies, not its list or its Lease")
}

func TestCountIn_sums_a_histogram_s_count_or_a_counter_over_its_series(t *testing.T) {
	const page = `# HELP loam_kube_controller_reconcile_duration_seconds Time.
# TYPE loam_kube_controller_reconcile_duration_seconds histogram
loam_kube_controller_reconcile_duration_seconds_bucket{loam_kube_controller_reconcile_outcome="success",le="+Inf"} 7
loam_kube_controller_reconcile_duration_seconds_sum{loam_kube_controller_reconcile_outcome="success"} 0.5
loam_kube_controller_reconcile_duration_seconds_count{loam_kube_controller_reconcile_outcome="success"} 7
loam_kube_controller_reconcile_duration_seconds_bucket{loam_kube_controller_reconcile_outcome="error",le="+Inf"} 2
loam_kube_controller_reconcile_duration_seconds_sum{loam_kube_controller_reconcile_outcome="error"} 0.1
loam_kube_controller_reconcile_duration_seconds_count{loam_kube_controller_reconcile_outcome="error"} 2
# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="memcached",result="success"} 5
controller_runtime_reconcile_total{controller="memcached",result="requeue"} 1
`
	tests := []struct {
		name string
		want float64
	}{
		{loamReconciles, 9},
		{crReconciles, 6},
	}
	for _, tt := range tests {
		n, err := countIn(strings.NewReader(page), tt.name)
		require.NoError(t, err)
		require.Equal(t, tt.want, n, tt.name)
	}
	_, err := countIn(strings.NewReader(page), "go_goroutines")
	require.ErrorContains(t, err, "no metric go_goroutines among 2", "a controller that records nothing fails the scrape")
}
