package otlp_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/otlp"
	"github.com/loam-dev/loam/examples/otlp/otlptest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// countingNetwork is the real loopback network, counting the dials made
// through it.
type countingNetwork struct {
	dials atomic.Int32
}

func (n *countingNetwork) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	n.dials.Add(1)
	return app.OSHost().Dial(ctx, network, address)
}

func (*countingNetwork) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	return app.OSHost().Listen(ctx, network, address)
}

// receive starts a Receiver on loopback, closed when the test ends.
func receive(t *testing.T) (*otlptest.Receiver, string) {
	t.Helper()
	r := otlptest.NewReceiver()
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// emit records one span, one counter and one log record, the record in
// the span, through tel.
func emit(t *testing.T, tel app.Telemetry) {
	t.Helper()
	ctx, span := tel.TracerProvider.Tracer("github.com/loam-dev/loam/kube").Start(t.Context(), "reconcile Memcached")
	span.SetAttributes(attribute.String("loam.kube.object.name", "cache"))
	counter, err := tel.MeterProvider.Meter("github.com/loam-dev/loam/kube").Int64Counter("loam.kube.controller.queue.adds")
	require.NoError(t, err)
	counter.Add(ctx, 2, metric.WithAttributes(attribute.String("loam.kube.controller.name", "memcached")))
	var r log.Record
	r.SetSeverity(log.SeverityWarn)
	r.SetSeverityText("WARN")
	r.SetBody(attribute.StringValue("reconcile failed"))
	r.AddAttributes(attribute.String("loam.kube.object.name", "cache"))
	tel.LoggerProvider.Logger("github.com/loam-dev/loam/kube").Emit(ctx, r)
	span.End()
}

func TestNewExportsEverySignal(t *testing.T) {
	receiver, url := receive(t)
	env := apptest.Env{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    url,
		"OTEL_EXPORTER_OTLP_HEADERS":     "api-key=secret",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
		"OTEL_RESOURCE_ATTRIBUTES":       "k8s.namespace.name=memcached-system,service.name=overridden",
		"OTEL_SERVICE_NAME":              "memcached-operator",
		"OTEL_TRACES_SAMPLER":            "always_on",
	}
	s, err := otlp.Read(t.Context(), env, nil)
	require.NoError(t, err)
	network := &countingNetwork{}
	tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: network}, s, otlp.Options{ServiceName: "fallback"})
	require.NoError(t, err)
	emit(t, tel)
	require.NoError(t, shutdown(t.Context()), "the shutdown flushes every signal")

	wantResource := map[string]any{"service.name": "memcached-operator", "k8s.namespace.name": "memcached-system"}
	spans := receiver.SpansNamed("reconcile Memcached")
	require.Len(t, spans, 1)
	require.Equal(t, wantResource, spans[0].Resource)
	require.Equal(t, "github.com/loam-dev/loam/kube", spans[0].Scope)
	require.Equal(t, map[string]any{"loam.kube.object.name": "cache"}, spans[0].Attributes)

	metrics := receiver.MetricsNamed("loam.kube.controller.queue.adds")
	require.NotEmpty(t, metrics)
	require.Equal(t, wantResource, metrics[0].Resource)
	require.Equal(t, []map[string]any{{"loam.kube.controller.name": "memcached"}}, metrics[0].Points)

	logs := receiver.Logs()
	require.Len(t, logs, 1)
	require.Equal(t, otlptest.LogRecord{
		Resource:   wantResource,
		Scope:      "github.com/loam-dev/loam/kube",
		Severity:   "WARN",
		Body:       "reconcile failed",
		Attributes: map[string]any{"loam.kube.object.name": "cache"},
		TraceID:    spans[0].TraceID,
		SpanID:     spans[0].SpanID,
	}, logs[0], "the record carries its span's IDs")

	requests := receiver.Requests()
	paths := map[string]bool{}
	for _, r := range requests {
		paths[r.Path] = true
		require.Equal(t, "secret", r.Header.Get("Api-Key"))
		require.Equal(t, "gzip", r.Header.Get("Content-Encoding"))
	}
	require.Equal(t, map[string]bool{"/v1/traces": true, "/v1/metrics": true, "/v1/logs": true}, paths)
	require.Positive(t, network.dials.Load(), "the exporters dial through the Host")
}

func TestNewWithoutEndpointsExportsNothing(t *testing.T) {
	tests := []struct {
		name string
		env  apptest.Env
		opts otlp.Options
	}{
		{name: "no variable", env: apptest.Env{}},
		{name: "every signal none", env: apptest.Env{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
			"OTEL_TRACES_EXPORTER":        "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none",
		}},
		{name: "disabled", env: apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := otlp.Read(t.Context(), tt.env, nil)
			require.NoError(t, err)
			network := &countingNetwork{}
			tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: network}, s, tt.opts)
			require.NoError(t, err)
			require.Equal(t, app.Telemetry{}, tel, "no provider at all, for app to fill with no-ops")
			require.NoError(t, shutdown(t.Context()))
			require.Zero(t, network.dials.Load())
		})
	}
}

// countingProcessor counts the log records emitted to it.
type countingProcessor struct {
	emitted atomic.Int32
}

func (p *countingProcessor) OnEmit(context.Context, *sdklog.Record) error {
	p.emitted.Add(1)
	return nil
}

func (*countingProcessor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (*countingProcessor) Shutdown(context.Context) error                         { return nil }
func (*countingProcessor) ForceFlush(context.Context) error                       { return nil }

func TestNewKeepsTheAppsOwnReadersAndProcessorsWhenDisabled(t *testing.T) {
	receiver, url := receive(t)
	s, err := otlp.Read(t.Context(), apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SDK_DISABLED": "true"}, nil)
	require.NoError(t, err)
	logs := &countingProcessor{}
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	tel, shutdown, err := otlp.New(t.Context(), app.Host{Network: &countingNetwork{}}, s, otlp.Options{
		ServiceName:    "memcached-operator",
		SpanProcessors: []sdktrace.SpanProcessor{spans},
		MetricReaders:  []sdkmetric.Reader{reader},
		LogProcessors:  []sdklog.Processor{logs},
	})
	require.NoError(t, err)
	emit(t, tel)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm))
	require.Len(t, rm.ScopeMetrics, 1)
	require.Equal(t, "loam.kube.controller.queue.adds", rm.ScopeMetrics[0].Metrics[0].Name)
	name, _ := rm.Resource.Set().Value("service.name")
	require.Equal(t, "memcached-operator", name.AsString())
	require.Len(t, spans.Ended(), 1)
	require.Equal(t, int32(1), logs.emitted.Load())

	require.NoError(t, shutdown(t.Context()))
	require.Empty(t, receiver.Requests(), "nothing is exported by OTLP")
}

func TestNewWithoutANetwork(t *testing.T) {
	s, err := otlp.Read(t.Context(), apptest.Env{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://127.0.0.1:1/v1/logs"}, nil)
	require.NoError(t, err)
	_, _, err = otlp.New(t.Context(), app.Host{}, s, otlp.Options{})
	require.EqualError(t, err, "otlp: the Host has no Network to dial the collector through: build the telemetry with app.WithHostTelemetry")
}

func TestBuilderFailsTheAppNamingEveryVariable(t *testing.T) {
	var stderr strings.Builder
	code := app.Run(t.Context(), func(context.Context, *app.Setup) ([]app.Service, error) {
		return nil, errors.New("init never runs")
	},
		app.WithProcess(app.Process{Environment: apptest.Env{
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/xml",
			"OTEL_TRACES_SAMPLER":         "sometimes",
			"OTEL_BSP_MAX_QUEUE_SIZE":     "10",
		}, Stderr: &stderr}),
		app.WithHostTelemetry(otlp.Builder(otlp.Options{ServiceName: "memcached-operator"})),
	)
	require.Equal(t, 78, code)
	require.Equal(t, strings.Join([]string{
		"telemetry: config OTEL_BSP_MAX_QUEUE_SIZE: not supported: examples/otlp reads only the variables otlp.Variables lists",
		`config OTEL_TRACES_SAMPLER: "sometimes" is not supported: only always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio`,
		`config OTEL_EXPORTER_OTLP_PROTOCOL: "http/xml" is not supported: only grpc, http/protobuf or http/json is`,
	}, "\n")+"\n", stderr.String())
}
