package kube_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/log/noop"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/kube"
)

// BenchmarkTransport_failure_injection compares a request through the
// Client's whole transport, to the same in-memory API server over TLS and
// HTTP/2 as BenchmarkTransport, without failure injection, with it and no
// scenario (every request outside an experiment), and with a scenario whose
// rules match nothing (an evaluation, its event and the strip).
//
//	go test -run '^$' -bench Transport_failure_injection -benchmem ./kube/
func BenchmarkTransport_failure_injection(b *testing.B) {
	h, ca := apptest.NewHost(b), apptest.NewCA(b)
	ln, err := h.Listen(context.Background(), "tcp", "api.test:443")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: &apiServer{}, TLSConfig: ca.ServerConfig("api.test"), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	b.Cleanup(func() { _ = srv.Close() })

	conn := kube.Connection{
		Server: "api.test:443",
		TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		Token:  func(context.Context) (string, error) { return "token", nil },
	}
	quiet := app.Telemetry{
		TracerProvider: tracenoop.NewTracerProvider(),
		MeterProvider:  metricnoop.NewMeterProvider(),
		LoggerProvider: noop.NewLoggerProvider(),
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	codec, err := jsonscenario.New("acme.fault")
	if err != nil {
		b.Fatal(err)
	}
	faults, err := fault.New(fault.Settings{Decoder: codec})
	if err != nil {
		b.Fatal(err)
	}
	other, err := baggage.Parse("tenant=a")
	if err != nil {
		b.Fatal(err)
	}
	plain := baggage.ContextWithBaggage(context.Background(), other)
	scenario, err := fit.ContextWithScenario(plain, codec, fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:secrets:*", Fault: fit.Fault{Abort: true}},
	}})
	if err != nil {
		b.Fatal(err)
	}

	for _, bc := range []struct {
		name   string
		faults *fault.Injector
		ctx    context.Context
	}{
		{"faults off", nil, plain},
		{"faults on, no scenario", faults, plain},
		{"faults on, a scenario matching nothing", faults, scenario},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := kube.NewClient(&app.Setup{Host: h.Host(), Telemetry: quiet, Faults: bc.faults}, conn)
			if err != nil {
				b.Fatal(err)
			}
			client := &http.Client{Transport: c.RoundTripper()}
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(bc.ctx, http.MethodGet, "https://api.test:443/api/v1/namespaces", nil)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
			}
		})
	}
}
