// Command memcached runs the Memcached operator: the Memcached controller
// and Budget's, with a probes server and a metrics server for Prometheus,
// exporting by OTLP too when OTEL_EXPORTER_OTLP_ENDPOINT says where, and
// failure injection, which FAILURE_INJECTION_SWITCH's ConfigMap turns on
// and off.
// deploy/ has what runs it in a cluster; MEMCACHED_KUBECONFIG runs it from
// a laptop, where the API server must reach its webhooks at a URL on the
// laptop (docs/kubernetes.md, "From a laptop, with the webhooks").
package main

import (
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/examples/memcached"
)

func main() {
	op := memcached.NewOperator("memcached-operator")
	app.Main(op.Init, app.WithHostTelemetry(op.HostTelemetry), memcached.Faults())
}
