package otlp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/otlp"
)

// setRealEnvironment sets, in the test process's real environment, every
// variable that would send the telemetry to decoy, or change it, were
// the SDK or an exporter to read it.
func setRealEnvironment(t *testing.T, decoy string) {
	for name, value := range map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":          decoy,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":   decoy + "/v1/traces",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT":  decoy + "/v1/metrics",
		"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT":     decoy + "/v1/logs",
		"OTEL_EXPORTER_OTLP_HEADERS":           "leak=yes",
		"OTEL_EXPORTER_OTLP_COMPRESSION":       "gzip",
		"OTEL_EXPORTER_OTLP_PROTOCOL":          "grpc",
		"OTEL_SERVICE_NAME":                    "leaked",
		"OTEL_RESOURCE_ATTRIBUTES":             "leak=yes",
		"OTEL_TRACES_SAMPLER":                  "always_off",
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT":      "0",
		"OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT": "0",
		"OTEL_SDK_DISABLED":                    "true",
		"OTEL_BSP_MAX_QUEUE_SIZE":              "notanumber",
	} {
		t.Setenv(name, value)
	}
}

func TestTheRealEnvironmentIsIgnored(t *testing.T) {
	decoy, decoyURL := receive(t)
	setRealEnvironment(t, decoyURL)
	receiver, url := receive(t)

	s, err := otlp.Read(t.Context(), apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_COMPRESSION": "none"}, nil)
	require.NoError(t, err, "only the Process's environment is read")
	tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: &countingNetwork{}}, s, otlp.Options{ServiceName: "memcached-operator"})
	require.NoError(t, err)
	emit(t, tel)
	require.NoError(t, shutdown(t.Context()))

	require.Empty(t, decoy.Requests(), "nothing reached the real environment's endpoints")
	require.NotEmpty(t, receiver.Requests())
	for _, r := range receiver.Requests() {
		require.Empty(t, r.Header.Get("Leak"), "no header of the real environment's")
		require.Empty(t, r.Header.Get("Content-Encoding"), "the Process's compression, none")
	}
	ours := map[string]any{"service.name": "memcached-operator"}
	spans := receiver.SpansNamed("reconcile Memcached")
	require.Len(t, spans, 1, "sampled by the Process's sampler, the default, not always_off")
	require.Equal(t, ours, spans[0].Resource, "no attribute of the real OTEL_RESOURCE_ATTRIBUTES")
	require.Equal(t, map[string]any{"loam.kube.object.name": "cache"}, spans[0].Attributes, "the limits passed, not the real environment's 0")
	metrics := receiver.MetricsNamed("loam.kube.controller.queue.adds")
	require.NotEmpty(t, metrics)
	require.Equal(t, ours, metrics[0].Resource)

	logs := receiver.Logs()
	require.Len(t, logs, 1)
	require.Equal(t, map[string]any{"loam.kube.object.name": "cache"}, logs[0].Attributes)
	require.Equal(t, ours, logs[0].Resource, "no attribute of the real OTEL_RESOURCE_ATTRIBUTES, nor OTEL_SERVICE_NAME's name, though the log SDK merged them into its resource: loam's own exporter sends ours")
}

func TestTheRealEnvironmentAloneExportsNothing(t *testing.T) {
	decoy, decoyURL := receive(t)
	setRealEnvironment(t, decoyURL)
	t.Setenv("OTEL_SDK_DISABLED", "false")

	s, err := otlp.Read(t.Context(), apptest.Env{}, nil)
	require.NoError(t, err)
	network := &countingNetwork{}
	tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: network}, s, otlp.Options{})
	require.NoError(t, err)
	require.Equal(t, app.Telemetry{}, tel, "no exporter, no provider")
	require.NoError(t, shutdown(t.Context()))
	require.Empty(t, decoy.Requests())
	require.Zero(t, network.dials.Load())
}
