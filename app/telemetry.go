package app

import (
	"context"
	"fmt"
	"io"

	lognoop "go.opentelemetry.io/otel/log/noop"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// MetricNames says which names a Setup's metrics are recorded under.
type MetricNames int

const (
	// MetricNamesLoam records loam's own instruments only, such as
	// loam.kube.controller.reconcile.duration: the default.
	MetricNamesLoam MetricNames = iota
	// MetricNamesControllerRuntime records, beside loam's own,
	// controller-runtime's names, labels and buckets wherever loam
	// measures the same thing — controller_runtime_reconcile_total,
	// workqueue_depth, leader_election_master_status,
	// rest_client_requests_total and the others docs/kubernetes.md lists
	// — so that a dashboard or an alert written for a controller-runtime
	// operator reads a loam one.
	MetricNamesControllerRuntime
)

// String returns "loam" or "controller-runtime", or MetricNames(n) for
// any other value.
func (n MetricNames) String() string {
	switch n {
	case MetricNamesLoam:
		return "loam"
	case MetricNamesControllerRuntime:
		return "controller-runtime"
	}
	return fmt.Sprintf("MetricNames(%d)", int(n))
}

// defaultPropagator is W3C trace context and W3C baggage: what carries a
// trace, and a failure-injection scenario, from one App to the next.
func defaultPropagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// buildTelemetry returns the App's Telemetry and the func that flushes and
// shuts it down, from b, which is handed h and p, or, with no b, the
// default.
func buildTelemetry(ctx context.Context, b HostTelemetryBuilder, h Host, p Process) (Telemetry, func(context.Context) error, error) {
	if b == nil {
		t, shutdown := defaultTelemetry(p.Stderr)
		return t, shutdown, nil
	}
	var (
		t        Telemetry
		shutdown func(context.Context) error
	)
	err := recovered(func() error {
		var err error
		t, shutdown, err = b(ctx, h, p)
		return err
	})
	if err != nil {
		if shutdown != nil {
			// The builder may have started exporters before it failed.
			_ = shutdown(ctx)
		}
		return Telemetry{}, nil, fmt.Errorf("telemetry: %w", err)
	}
	if t.MetricNames != MetricNamesLoam && t.MetricNames != MetricNamesControllerRuntime {
		if shutdown != nil {
			_ = shutdown(ctx)
		}
		return Telemetry{}, nil, fmt.Errorf("telemetry: Telemetry.MetricNames is %v: want MetricNamesLoam or MetricNamesControllerRuntime", t.MetricNames)
	}
	return completeTelemetry(t), shutdown, nil
}

// defaultTelemetry has no-op traces and metrics, and writes log records to
// stderr as JSON lines. Its LoggerProvider is built with every setting
// given, so no OpenTelemetry variable of the real environment changes a
// line: the SDK merges the real OTEL_RESOURCE_ATTRIBUTES into the empty
// resource it is given, whatever it is given, but a line never shows the
// resource.
func defaultTelemetry(stderr io.Writer) (Telemetry, func(context.Context) error) {
	lp := sdklog.NewLoggerProvider(
		sdklog.WithResource(resource.Empty()),
		sdklog.WithAttributeCountLimit(128),
		sdklog.WithAttributeValueLengthLimit(-1),
		sdklog.WithProcessor(newJSONLines(stderr)),
	)
	return Telemetry{
		TracerProvider: tracenoop.NewTracerProvider(),
		MeterProvider:  metricnoop.NewMeterProvider(),
		LoggerProvider: lp,
		Propagator:     defaultPropagator(),
	}, lp.Shutdown
}

// completeTelemetry fills t's nil fields with no-ops and the default
// propagator.
func completeTelemetry(t Telemetry) Telemetry {
	if t.TracerProvider == nil {
		t.TracerProvider = tracenoop.NewTracerProvider()
	}
	if t.MeterProvider == nil {
		t.MeterProvider = metricnoop.NewMeterProvider()
	}
	if t.LoggerProvider == nil {
		t.LoggerProvider = lognoop.NewLoggerProvider()
	}
	if t.Propagator == nil {
		t.Propagator = defaultPropagator()
	}
	return t
}
