package databases

import "github.com/loam-dev/loam/examples/telemetry"

// Operator is the Database controller's App as command databases runs it: its
// HostTelemetry method, a *telemetry.Builder's, is the App's
// HostTelemetryBuilder and its Init method the App's Init, and the two
// share the Prometheus exporter that HostTelemetry builds the
// MeterProvider on and Init serves on METRICS_ADDRESS:
//
//	op := databases.NewOperator("databases-controller")
//	app.Main(op.Init, app.WithHostTelemetry(op.HostTelemetry))
//
// One Operator runs one App at a time.
type Operator struct{ *telemetry.Builder }

// NewOperator returns an Operator whose telemetry names service, the
// OpenTelemetry service.name, unless OTEL_SERVICE_NAME names another.
func NewOperator(service string) *Operator { return &Operator{telemetry.New(service)} }
