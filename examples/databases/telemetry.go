package databases

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

// Operator is the Database controller's App as command databases runs it:
// its HostTelemetry method is the App's HostTelemetryBuilder and its Init
// method the App's Init, and the two share the Prometheus exporter that
// HostTelemetry builds the MeterProvider on and Init serves on
// METRICS_ADDRESS:
//
//	op := databases.NewOperator("databases-controller")
//	app.Main(op.Init, app.WithHostTelemetry(op.HostTelemetry))
//
// An SDK MeterProvider takes its readers when it is built, so the
// exporter can only come from the builder; the Operator carries it from
// one to the other rather than a global. One Operator runs one App at a
// time: HostTelemetry, which the App calls before Init, replaces the
// exporter.
type Operator struct {
	service  string
	exporter *httpmetrics.Exporter // made by HostTelemetry, served by Init
}

// NewOperator returns an Operator whose telemetry names service, the
// OpenTelemetry service.name.
func NewOperator(service string) *Operator { return &Operator{service: service} }

// Telemetry is HostTelemetry for an App built with app.WithTelemetry,
// which hands the builder no Host: with an OTLP endpoint among the
// Process's OTEL_* variables it fails, since the exporters would have
// nothing to dial through.
func (o *Operator) Telemetry(ctx context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
	return o.HostTelemetry(ctx, app.Host{}, p)
}

// HostTelemetry is the controller's HostTelemetryBuilder: its log records
// go to the Process's stderr as one JSON object a line, each naming the
// service, and its metrics to a MeterProvider read by an httpmetrics
// Exporter, which Init serves. When the Process's OTEL_* variables name an
// OTLP endpoint (see examples/otlp), its traces, metrics and log records
// are exported by OTLP too, through h, from the same providers; without
// one, traces are the App's no-op default. The service is the Operator's,
// unless OTEL_SERVICE_NAME names another. It returns an error naming every
// bad or unsupported OTEL_* variable, and when the exporter cannot be
// made.
func (o *Operator) HostTelemetry(ctx context.Context, h app.Host, p app.Process) (app.Telemetry, func(context.Context) error, error) {
	settings, err := otlp.Read(ctx, p.Environment)
	exporter, exporterErr := httpmetrics.NewExporter()
	if err := errors.Join(err, exporterErr); err != nil {
		return app.Telemetry{}, nil, err
	}
	// otlp.New builds every provider with each setting the SDK would
	// otherwise read from the real environment, the resource's and the
	// exemplar filter's among them.
	t, shutdown, err := otlp.New(ctx, h, settings, otlp.Options{
		ServiceName:   o.service,
		MetricReaders: []sdkmetric.Reader{exporter},
		LogProcessors: []sdklog.Processor{jsonlog.New(p.Stderr, settings.Service(o.service))},
	})
	if err != nil {
		return app.Telemetry{}, nil, err
	}
	o.exporter = exporter
	return t, shutdown, nil
}
