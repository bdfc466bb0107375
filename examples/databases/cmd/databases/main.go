// Command databases runs the Database controller: it provisions a
// PostgreSQL database, a login role and a Secret of credentials for each
// Database. POSTGRES_HOST and its siblings name the server;
// DATABASES_KUBECONFIG runs it from a laptop; METRICS_ADDRESS is where
// Prometheus scrapes its metrics; OTEL_EXPORTER_OTLP_ENDPOINT exports its
// traces, metrics and logs by OTLP too.
package main

import (
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/examples/databases"
)

func main() {
	op := databases.NewOperator("databases-controller")
	app.Main(op.Init, app.WithHostTelemetry(op.HostTelemetry))
}
