package kube_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/log/noop"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// BenchmarkTransport compares a request through the Client's layers with
// one through client-go's own default transport, to the same in-memory
// API server over TLS and HTTP/2.
//
//	go test -run '^$' -bench Transport -benchmem ./kube/
func BenchmarkTransport(b *testing.B) {
	h, ca := apptest.NewHost(b), apptest.NewCA(b)
	ln, err := h.Listen(context.Background(), "tcp", "api.test:443")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: &apiServer{}, TLSConfig: ca.ServerConfig("api.test"), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	b.Cleanup(func() { _ = srv.Close() })

	token := func(context.Context) (string, error) { return "token", nil }
	conn := kube.Connection{Server: "api.test:443", TLS: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}, Token: token}
	quiet := app.Telemetry{
		TracerProvider: tracenoop.NewTracerProvider(),
		MeterProvider:  metricnoop.NewMeterProvider(),
		LoggerProvider: noop.NewLoggerProvider(),
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	recorded := apptest.NewTelemetry()

	loam := func(tel app.Telemetry) http.RoundTripper {
		c, err := kube.NewClient(&app.Setup{Host: h.Host(), Telemetry: tel}, conn)
		if err != nil {
			b.Fatal(err)
		}
		return c.RoundTripper()
	}
	clientGo, err := rest.TransportFor(&rest.Config{
		Host:            "https://api.test:443",
		BearerToken:     "token",
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.PEM()},
		Dial:            func(ctx context.Context, network, addr string) (net.Conn, error) { return h.Dial(ctx, network, addr) },
	})
	if err != nil {
		b.Fatal(err)
	}

	for _, bc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"client-go default", clientGo},
		{"loam, no-op telemetry", loam(quiet)},
		{"loam, recording telemetry", loam(recorded.Telemetry)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			client := &http.Client{Transport: bc.rt}
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://api.test:443/api/v1/namespaces", nil)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_ = resp.Body.Close()
			}
		})
	}
}
