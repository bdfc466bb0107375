package telemetry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/ports"
)

// discard is a log processor that drops every record, as an exporter
// that is never slow would.
type discard struct{}

func (discard) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (discard) OnEmit(context.Context, *sdklog.Record) error           { return nil }
func (discard) Shutdown(context.Context) error                         { return nil }
func (discard) ForceFlush(context.Context) error                       { return nil }

// newBenchRecorder returns a Recorder on the SDK's providers, sampling
// every span and keeping nothing, so a long benchmark doesn't fill memory.
func newBenchRecorder(b *testing.B) *telemetry.Recorder {
	b.Helper()
	rec, err := telemetry.NewRecorder(telemetry.Config{
		Name:           controllerName,
		Kind:           kind,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample())),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
		LoggerProvider: sdklog.NewLoggerProvider(sdklog.WithProcessor(discard{})),
	})
	require.NoError(b, err)
	return rec
}

// BenchmarkReconcile is the telemetry of one reconcile on the SDK: its
// span, its record when it failed, and its reconcile.duration point.
func BenchmarkReconcile(b *testing.B) {
	for _, tc := range []struct {
		name   string
		report ports.Report
	}{
		{"success", ports.Report{Outcome: ports.OutcomeSuccess, Duration: time.Millisecond}},
		{"error", ports.Report{Outcome: ports.OutcomeError, Err: errors.New("boom"), Duration: time.Millisecond}},
		{"timeout", ports.Report{Outcome: ports.OutcomeTimeout, Err: context.DeadlineExceeded, Timeout: time.Minute, Duration: time.Minute}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rec := newBenchRecorder(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				rctx := rec.ReconcileStarted(ctx, namespaced)
				rec.ReconcileEnded(rctx, namespaced, tc.report)
			}
		})
	}
}

// BenchmarkQueueMetrics is what an add and a take cost the queue's metrics.
func BenchmarkQueueMetrics(b *testing.B) {
	rec := newBenchRecorder(b)
	m := rec.QueueMetrics()
	depth, adds, latency := m.NewDepthMetric(controllerName), m.NewAddsMetric(controllerName), m.NewLatencyMetric(controllerName)
	b.ReportAllocs()
	for b.Loop() {
		adds.Inc()
		depth.Inc()
		depth.Dec()
		latency.Observe(0.01)
	}
}

// BenchmarkLogger is client-go logging through the Logger: a chatty
// verbosity it drops, and an Info it records.
func BenchmarkLogger(b *testing.B) {
	rec := newBenchRecorder(b)
	logger := rec.Logger().WithName("reflector")
	b.Run("V(4) dropped", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			logger.V(4).Info("Watch close", "reflector", "configmaps", "totalItems", 12)
		}
	})
	b.Run("Info recorded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			logger.Info("Warning: watch ended with error", "reflector", "configmaps", "type", "*v1.ConfigMap")
		}
	})
}
