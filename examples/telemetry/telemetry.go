// Package telemetry is the example operators' telemetry: their log records
// go to the Process's stderr as JSON lines, their metrics to a
// MeterProvider that an httpmetrics Exporter reads for Init to serve on
// METRICS_ADDRESS, and, when the Process's OTEL_* variables name an OTLP
// endpoint, their traces, metrics and log records to it by OTLP (see
// examples/otlp).
//
// An SDK MeterProvider takes its readers when it is built, so the
// Exporter can only come from the App's telemetry builder; a Builder
// carries it from the builder to Init rather than a global:
//
//	op := memcached.NewOperator("memcached-operator") // embeds a *telemetry.Builder
//	app.Main(op.Init, app.WithHostTelemetry(op.HostTelemetry))
package telemetry

import (
	"context"
	"errors"

	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/examples/jsonlog"
	"github.com/loam-dev/loam/examples/otlp"
)

// ErrNoExporter is what an operator's Init reports, wrapped, when the App's
// telemetry was not built by its Builder, so no Exporter reads the
// MeterProvider a metrics Service would serve.
var ErrNoExporter = errors.New("the App's telemetry is not the Operator's, so no exporter reads its MeterProvider for the metrics Service: run the App with app.WithHostTelemetry(op.HostTelemetry)")

// Builder builds an operator's telemetry, and keeps the Exporter of the
// last build for its Init. One Builder serves one App at a time: each
// build replaces the Exporter. New makes one.
type Builder struct {
	service  string
	exporter *httpmetrics.Exporter // made by HostTelemetry, served by Init
}

// New returns a Builder whose telemetry names service, the OpenTelemetry
// service.name, unless OTEL_SERVICE_NAME names another.
func New(service string) *Builder { return &Builder{service: service} }

// Exporter returns the Exporter the last successful build read its
// MeterProvider with, or nil when there has been none.
func (b *Builder) Exporter() *httpmetrics.Exporter { return b.exporter }

// Telemetry is HostTelemetry for an App built with app.WithTelemetry,
// which hands the builder no Host: with an OTLP endpoint among the
// Process's OTEL_* variables it fails, since the exporters would have
// nothing to dial through.
func (b *Builder) Telemetry(ctx context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
	return b.HostTelemetry(ctx, app.Host{}, p)
}

// HostTelemetry is an app.HostTelemetryBuilder: log records go to the
// Process's stderr as one JSON object a line, each naming the service,
// and metrics to a MeterProvider read by an httpmetrics Exporter, which
// Exporter returns for Init and whose target_info is the OTLP signals'
// resource, made from the Process's OTEL_* variables alone. When the Process's OTEL_* variables name an
// OTLP endpoint, traces, metrics and log records are exported by OTLP
// too, through h, from the same providers; without one, traces are the
// App's no-op default. It returns an error naming every bad or
// unsupported OTEL_* variable, and when the Exporter cannot be made; a
// failed build keeps no Exporter.
func (b *Builder) HostTelemetry(ctx context.Context, h app.Host, p app.Process) (app.Telemetry, func(context.Context) error, error) {
	settings, err := otlp.Read(ctx, p.Environment, h.FS)
	// /metrics' target_info is the resource the OTLP signals get, made
	// from the Process's environment; without WithResource it would be the
	// MeterProvider's, which the SDK merges with the real environment's.
	exporter, exporterErr := httpmetrics.NewExporter(httpmetrics.WithResource(settings.Resource(b.service)))
	if err := errors.Join(err, exporterErr); err != nil {
		return app.Telemetry{}, nil, err
	}
	// otlp.New builds every provider with each setting the SDK would
	// otherwise read from the real environment, the resource's and the
	// exemplar filter's among them.
	t, shutdown, err := otlp.New(ctx, h, settings, otlp.Options{
		ServiceName:   b.service,
		MetricReaders: []sdkmetric.Reader{exporter},
		LogProcessors: []sdklog.Processor{jsonlog.New(p.Stderr, settings.Service(b.service))},
	})
	if err != nil {
		return app.Telemetry{}, nil, err
	}
	b.exporter = exporter
	return t, shutdown, nil
}
