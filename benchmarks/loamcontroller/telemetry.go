package loamcontroller

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/examples/jsonlog"
)

// ServiceName is the controller's OpenTelemetry service.name.
const ServiceName = "loamcontroller"

// errNoExporter is what Init reports when the App's telemetry was not
// built by its Telemetry, so no exporter reads the MeterProvider.
var errNoExporter = errors.New("loamcontroller: the App's telemetry is not the controller's: run it with app.WithTelemetry(tel.Build)")

// Telemetry builds the controller's telemetry as an operator runs in
// production, and keeps the Exporter for Init to serve: metrics recorded
// into an OpenTelemetry SDK MeterProvider that app/httpmetrics' Prometheus
// exporter reads, as the example operators have it (examples/telemetry),
// without their OTLP exporters, which the comparison never sends to and
// whose code controller-runtime's program doesn't link either; log
// records to the Process's stderr as JSON lines; no traces, as
// controller-runtime has none. Its zero value is ready to use.
type Telemetry struct {
	exporter *httpmetrics.Exporter
}

// Build is an app.TelemetryBuilder. It fails when the exporter can't be
// made.
func (t *Telemetry) Build(_ context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
	res := resource.NewSchemaless(attribute.String("service.name", ServiceName))
	exporter, err := httpmetrics.NewExporter(httpmetrics.WithResource(res))
	if err != nil {
		return app.Telemetry{}, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(exporter))
	lp := sdklog.NewLoggerProvider(sdklog.WithResource(resource.Empty()),
		sdklog.WithProcessor(jsonlog.New(p.Stderr, ServiceName)))
	t.exporter = exporter
	shutdown := func(ctx context.Context) error { return errors.Join(mp.Shutdown(ctx), lp.Shutdown(ctx)) }
	return app.Telemetry{MeterProvider: mp, LoggerProvider: lp}, shutdown, nil
}
