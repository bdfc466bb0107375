package telemetry_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/adapters/transport"
	"github.com/loam-dev/loam/adapters/webhook"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/app/tlsfiles"
	"github.com/loam-dev/loam/ports"
)

// gatherOperator returns what an operator's /metrics shows of everything
// but the reconciles and the queue (gather's): an httpmetrics Exporter,
// as the example operators serve, with its Go runtime and process
// collectors, read by a MeterProvider on which a sharded replica's
// Recorder acquires, releases and loses shards, its shards' Leases record
// their leader status with controller-runtime's names, the Client's
// transport sends a request, and a webhook Server allows a review and
// denies another.
func gatherOperator(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	exporter, err := httpmetrics.NewExporter()
	require.NoError(t, err)
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { require.NoError(t, meters.Shutdown(context.Background())) })
	ctx := t.Context()

	rec, err := telemetry.NewRecorder(telemetry.Config{
		Name: controllerName, Kind: kind, ControllerRuntime: true, Workers: 3,
		TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: meters, LoggerProvider: lognoop.NewLoggerProvider(),
	})
	require.NoError(t, err)
	rec.Sharded(2)
	for _, c := range []ports.ShardChange{ports.ShardAcquired, ports.ShardReleased, ports.ShardLost} {
		rec.ShardChanged(ctx, c, 0, 2)
	}

	shards, err := lease.NewShards(lease.ShardsConfig{
		Client: fake.NewClientset().CoordinationV1(), Name: controllerName, Namespace: "memcached-system",
		Identity: "pod-0", Incarnation: "a1", Count: 2,
		LeaseDuration: 15e9, RenewDeadline: 10e9, RetryPeriod: 2e9,
		MeterProvider: meters,
	})
	require.NoError(t, err)
	shards.Start(ctx, func() {})
	require.True(t, shards.WaitForSync(ctx))
	shards.Stop()

	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") }))
	t.Cleanup(api.Close)
	var d net.Dialer
	tr, err := transport.New(transport.Options{
		Server: api.Listener.Addr().String(), Dial: d.DialContext,
		TLS:            api.Client().Transport.(*http.Transport).TLSClientConfig,
		TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: meters, Propagator: propagation.TraceContext{},
		RequestCounts: true,
	})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+"/api", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	tr.CloseConnections()

	review(t, meters)

	gathered, err := exporter.Gatherer().Gather()
	require.NoError(t, err)
	return gathered
}

// review has a webhook Server, not serving, answer a review its Admitter
// allows and one it denies.
func review(t *testing.T, meters *sdkmetric.MeterProvider) {
	t.Helper()
	pair := apptest.NewCA(t).ServerCert("webhooks.memcached-system.svc")
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM}))
	settings := tlsfiles.DefaultSettings()
	settings.CertFile, settings.KeyFile = host.Path("tls.crt"), host.Path("tls.key")
	logger := lognoop.NewLoggerProvider().Logger("test")
	cert, err := tlsfiles.New(t.Context(), host.Host(), settings, logger)
	require.NoError(t, err)
	s, err := webhook.New(webhook.Config{
		Network: host.Network, Address: "localhost:9443", Certificate: cert,
		Routes:          []webhook.Route{{Path: "/validate", Name: "validate.memcacheds.cache.example.com", Type: webhook.Validating, Admitter: denyNamed("deny")}},
		MaxRequestBytes: 1 << 20,
		TracerProvider:  tracenoop.NewTracerProvider(), MeterProvider: meters, Propagator: propagation.TraceContext{},
		Logger: logger,
	})
	require.NoError(t, err)
	for _, name := range []string{"allow", "deny"} {
		body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-` + name + `",` +
			`"kind":{"group":"cache.example.com","version":"v1","kind":"Memcached"},` +
			`"resource":{"group":"cache.example.com","version":"v1","resource":"memcacheds"},` +
			`"namespace":"shop","name":"` + name + `","operation":"CREATE","userInfo":{"username":"alice"},` +
			`"object":{"apiVersion":"cache.example.com/v1","kind":"Memcached","metadata":{"namespace":"shop","name":"` + name + `"}}}}`
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/validate", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	}
}

// denyNamed denies the object of its name and allows every other.
type denyNamed string

func (d denyNamed) Admit(_ context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error) {
	if r.Name == string(d) {
		return ports.AdmissionResult{}, errors.New("spec.size: must be at most 10")
	}
	return ports.AdmissionResult{}, nil
}
