// Command loamcontroller is the comparison's loam controller: the App of
// package loamcontroller, as app.Main runs it, with its telemetry:
// metrics recorded and served on /metrics. The
// harness (cmd/compare) starts it with its settings in the environment;
// see that package.
package main

import (
	"os"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/benchmarks/loamcontroller"
)

func main() {
	// Metrics on, as in production: an SDK MeterProvider read by a
	// Prometheus exporter, which Init serves on /metrics.
	var tel loamcontroller.Telemetry
	app.Main(loamcontroller.Init(os.Stdin, &tel), app.WithTelemetry(tel.Build))
}
