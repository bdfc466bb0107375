package e2e

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/otlp/otlptest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The operator, run as command memcached runs it, with
// OTEL_EXPORTER_OTLP_ENDPOINT naming a receiver in the test, exports by
// OTLP the span of a Memcached's reconcile with docs/kubernetes.md's
// attributes, the controller's instruments, and its log records, each
// with the resource its OTEL_* variables name.
func TestOTLP_the_operator_exports_a_reconcile_s_span_its_metrics_and_its_records(t *testing.T) {
	receiver := otlptest.NewReceiver()
	collector := httptest.NewServer(receiver)
	t.Cleanup(collector.Close)

	f := readRBAC(t)
	o, kubeconfig := newOperator(t, f, f.clusterRole.Rules, f.role.Rules)
	o.create(t, "cache", 1)
	o.startAsMain(t, f, kubeconfig, map[string]string{
		"METRICS_ADDRESS":             "127.0.0.1:0",
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
		"OTEL_RESOURCE_ATTRIBUTES":    "k8s.pod.name=" + podName,
		"OTEL_METRIC_EXPORT_INTERVAL": "500",
	})
	resource := map[string]any{"service.name": "memcached-operator", "k8s.pod.name": podName}

	var reconciles []otlptest.Span
	wait.For(t, patience, func() bool {
		reconciles = nil
		for _, s := range receiver.SpansNamed("reconcile Memcached") {
			if s.Attributes["loam.kube.object.name"] == "cache" && s.Attributes["k8s.namespace.name"] == o.ns {
				reconciles = append(reconciles, s)
			}
		}
		return len(reconciles) > 0
	}, "the receiver never got a span named reconcile Memcached for the Memcached cache", o,
		wait.LastSeen(func() string { return spanNames(receiver) }))
	span := reconciles[0]
	require.Equal(t, resource, span.Resource)
	require.Equal(t, "github.com/loam-dev/loam/kube", span.Scope)
	require.Equal(t, "success", span.Attributes["loam.kube.controller.reconcile.outcome"])
	require.Len(t, span.TraceID, 32)

	wait.For(t, patience, func() bool {
		for _, m := range receiver.MetricsNamed("loam.kube.controller.reconcile.duration") {
			for _, p := range m.Points {
				if p["loam.kube.controller.name"] == "memcached-controller" {
					require.Equal(t, resource, m.Resource)
					require.Equal(t, "github.com/loam-dev/loam/kube", m.Scope)
					return true
				}
			}
		}
		return false
	}, "the receiver never got loam.kube.controller.reconcile.duration of memcached-controller", o)

	// The App logs that it is stopping, and flushes its records as it
	// exits.
	require.Equal(t, 0, o.app.Stop(), "stderr:\n%s", o.app.Stderr())
	var stopping []otlptest.LogRecord
	for _, r := range receiver.Logs() {
		if r.Body == "stopping" {
			stopping = append(stopping, r)
		}
	}
	require.Len(t, stopping, 1, "records: %v", receiver.Logs())
	require.Equal(t, "INFO", stopping[0].Severity)
	require.Equal(t, "github.com/loam-dev/loam/app", stopping[0].Scope)
	require.Equal(t, "memcached-operator", stopping[0].Resource["service.name"])
	require.Contains(t, o.app.Stderr(), `"body":"stopping"`, "the JSON lines on stderr keep coming")
}

// spanNames lists the names of the spans the receiver has, for a failed
// wait.
func spanNames(r *otlptest.Receiver) string {
	names := ""
	for _, s := range r.Spans() {
		names += s.Name + "\n"
	}
	return names
}
