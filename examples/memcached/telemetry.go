package memcached

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/examples/jsonlog"
)

// Operator is the operator's App as command memcached runs it: its
// Telemetry method is the App's TelemetryBuilder and its Init method the
// App's Init, and the two share the Prometheus exporter that Telemetry
// builds the MeterProvider on and Init serves on METRICS_ADDRESS:
//
//	op := memcached.NewOperator("memcached-operator")
//	app.Main(op.Init, app.WithTelemetry(op.Telemetry))
//
// An SDK MeterProvider takes its readers when it is built, so the
// exporter can only come from the builder; the Operator carries it from
// one to the other rather than a global. One Operator runs one App at a
// time: Telemetry, which the App calls before Init, replaces the exporter.
type Operator struct {
	service  string
	exporter *httpmetrics.Exporter // made by Telemetry, served by Init
}

// NewOperator returns an Operator whose telemetry names service, the
// OpenTelemetry service.name.
func NewOperator(service string) *Operator { return &Operator{service: service} }

// Telemetry is the operator's TelemetryBuilder: its log records go to the
// Process's stderr as one JSON object a line, each naming the Operator's
// service, and its metrics to a MeterProvider read by an httpmetrics
// Exporter, which Init serves. Traces are left to the App's no-op
// default. It returns an error when the exporter cannot be made.
func (o *Operator) Telemetry(_ context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
	exporter, err := httpmetrics.NewExporter()
	if err != nil {
		return app.Telemetry{}, nil, err
	}
	res := resource.NewSchemaless(attribute.String("service.name", o.service))
	lp := sdklog.NewLoggerProvider(
		sdklog.WithResource(res),
		sdklog.WithProcessor(jsonlog.New(p.Stderr, o.service)),
	)
	mp := sdkmetric.NewMeterProvider(
		// Both set, so the SDK reads neither OTEL_RESOURCE_ATTRIBUTES nor
		// OTEL_METRICS_EXEMPLAR_FILTER from the real environment.
		sdkmetric.WithResource(res),
		sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter),
		sdkmetric.WithReader(exporter),
	)
	o.exporter = exporter
	shutdown := func(ctx context.Context) error {
		return errors.Join(mp.Shutdown(ctx), lp.Shutdown(ctx))
	}
	return app.Telemetry{LoggerProvider: lp, MeterProvider: mp}, shutdown, nil
}
