package telemetry_test

import (
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// crFamily reports whether a family is one of controller-runtime's names.
func crFamily(name string) bool {
	return strings.HasPrefix(name, "controller_runtime_") || strings.HasPrefix(name, "workqueue_")
}

func TestControllerRuntimeNamesAreExportedOnlyWithTheOption(t *testing.T) {
	without := exportedOf(gather(t, false))
	for name := range without {
		require.False(t, crFamily(name), "%s exported without Config.ControllerRuntime", name)
	}

	families := exportedOf(gather(t, true))
	for name := range families {
		if !crFamily(name) {
			delete(families, name)
		}
	}
	scope := []string{"otel_scope_name", "otel_scope_schema_url", "otel_scope_version"}
	labels := func(names ...string) []string { return slices.Sorted(slices.Values(append(names, scope...))) }
	controller := labels("controller")
	queue := labels("controller", "name")
	require.Equal(t, map[string]exported{
		"controller_runtime_reconcile_total":           {dto.MetricType_COUNTER, labels("controller", "result")},
		"controller_runtime_reconcile_errors_total":    {dto.MetricType_COUNTER, controller},
		"controller_runtime_reconcile_panics_total":    {dto.MetricType_COUNTER, controller},
		"controller_runtime_reconcile_timeouts_total":  {dto.MetricType_COUNTER, controller},
		"controller_runtime_reconcile_time_seconds":    {dto.MetricType_HISTOGRAM, controller},
		"controller_runtime_active_workers":            {dto.MetricType_GAUGE, controller},
		"controller_runtime_max_concurrent_reconciles": {dto.MetricType_GAUGE, controller},
		"workqueue_depth":                              {dto.MetricType_GAUGE, queue},
		"workqueue_adds_total":                         {dto.MetricType_COUNTER, queue},
		"workqueue_queue_duration_seconds":             {dto.MetricType_HISTOGRAM, queue},
		"workqueue_unfinished_work_seconds":            {dto.MetricType_GAUGE, queue},
		"workqueue_longest_running_processor_seconds":  {dto.MetricType_GAUGE, queue},
	}, families)
}

// byName returns the gathered families by name.
func byName(gathered []*dto.MetricFamily) map[string]*dto.MetricFamily {
	m := make(map[string]*dto.MetricFamily, len(gathered))
	for _, f := range gathered {
		m[f.GetName()] = f
	}
	return m
}

// label returns m's label name's value, or "".
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// counters returns f's counter values by the label name's value.
func counters(f *dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		out[label(m, name)] += m.GetCounter().GetValue()
	}
	return out
}

// histogramOf returns f's count and sum over its series.
func histogramOf(f *dto.MetricFamily) (count uint64, sum float64) {
	for _, m := range f.GetMetric() {
		count += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	return count, sum
}

// gauge returns f's one series' value.
func gauge(t *testing.T, f *dto.MetricFamily) float64 {
	t.Helper()
	require.Len(t, f.GetMetric(), 1, f.GetName())
	return f.GetMetric()[0].GetGauge().GetValue()
}

func TestControllerRuntimeValuesAgreeWithLoams(t *testing.T) {
	f := byName(gather(t, true))

	// Two successes, one with an After, and an error, a panic and a
	// timeout: controller-runtime counts the last three as errors.
	loamCount, loamSum := histogramOf(f["loam_kube_controller_reconcile_duration_seconds"])
	crCount, crSum := histogramOf(f["controller_runtime_reconcile_time_seconds"])
	require.Equal(t, uint64(5), loamCount)
	require.Equal(t, loamCount, crCount)
	require.InDelta(t, loamSum, crSum, 1e-9)
	require.Equal(t, map[string]float64{"success": 1, "requeue_after": 1, "error": 3},
		counters(f["controller_runtime_reconcile_total"], "result"))
	outcomes := map[string]uint64{}
	for _, m := range f["loam_kube_controller_reconcile_duration_seconds"].GetMetric() {
		outcomes[label(m, "loam_kube_controller_reconcile_outcome")] += m.GetHistogram().GetSampleCount()
	}
	require.Equal(t, map[string]float64{"memcached": float64(outcomes["error"] + outcomes["panic"] + outcomes["timeout"])},
		counters(f["controller_runtime_reconcile_errors_total"], "controller"))
	require.Equal(t, map[string]float64{"memcached": float64(outcomes["panic"])},
		counters(f["controller_runtime_reconcile_panics_total"], "controller"))
	require.Equal(t, map[string]float64{"memcached": float64(outcomes["timeout"])},
		counters(f["controller_runtime_reconcile_timeouts_total"], "controller"))
	require.InDelta(t, 0.0, gauge(t, f["controller_runtime_active_workers"]), 0)
	require.InDelta(t, 3.0, gauge(t, f["controller_runtime_max_concurrent_reconciles"]), 0)

	require.Equal(t, counters(f["loam_kube_controller_queue_adds_total"], "loam_kube_controller_name")["memcached"],
		counters(f["workqueue_adds_total"], "name")["memcached"])
	require.InDelta(t, gauge(t, f["loam_kube_controller_queue_depth"]), gauge(t, f["workqueue_depth"]), 0)
	loamCount, loamSum = histogramOf(f["loam_kube_controller_queue_duration_seconds"])
	crCount, crSum = histogramOf(f["workqueue_queue_duration_seconds"])
	require.Equal(t, uint64(1), crCount)
	require.Equal(t, loamCount, crCount)
	require.InDelta(t, loamSum, crSum, 1e-9)
	require.InDelta(t, gauge(t, f["loam_kube_controller_reconcile_longest_unfinished_duration_seconds"]),
		gauge(t, f["workqueue_longest_running_processor_seconds"]), 0)
}
