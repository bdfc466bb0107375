package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/adapters/webhook"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/tlsfiles"
)

// newService returns a Service of one Validating Route on a test Host,
// and the Telemetry it reports through.
func newService(t *testing.T) (*webhook.Service, *apptest.Telemetry) {
	t.Helper()
	pair := apptest.NewCA(t).ServerCert(serverName)
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"tls/tls.crt": pair.CertPEM, "tls/tls.key": pair.KeyPEM}))
	tel := apptest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	logger := tel.LoggerProvider.Logger("test")
	settings := tlsfiles.DefaultSettings()
	settings.CertFile, settings.KeyFile = host.Path("tls/tls.crt"), host.Path("tls/tls.key")
	cert, err := tlsfiles.New(t.Context(), host.Host(), settings, logger)
	require.NoError(t, err)
	s, err := webhook.NewService(webhook.Config{
		Network: host.Network, Address: "localhost:9443", Certificate: cert,
		Routes:          []webhook.Route{{Path: validatePath, Name: "validate.v1.memcacheds.cache.example.com", Type: webhook.Validating, Admitter: admitter{}}},
		MaxRequestBytes: maxBytes,
		TracerProvider:  tel.TracerProvider, MeterProvider: tel.MeterProvider, Propagator: tel.Propagator,
		Logger: logger,
	})
	require.NoError(t, err)
	return s, tel
}

func TestNewService_fails_as_New_does(t *testing.T) {
	_, err := webhook.NewService(webhook.Config{})
	require.ErrorContains(t, err, "webhook: Config.Network is nil")
	require.ErrorContains(t, err, "webhook: Config.Routes is empty")
}

func TestService_is_healthy_from_when_it_listens_until_Serve_returns(t *testing.T) {
	s, _ := newService(t)
	require.Equal(t, "kube webhooks (localhost:9443)", s.String())
	healthy := func() bool {
		ok, err := s.Healthy(t.Context())
		require.NoError(t, err)
		return ok
	}
	require.False(t, healthy(), "not before it listens")
	require.Nil(t, s.Addr())

	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	<-s.Ready()
	require.True(t, healthy())
	require.NotNil(t, s.Addr())

	require.NoError(t, s.Shutdown(t.Context()))
	stop()
	require.NoError(t, <-served)
	require.False(t, healthy(), "not once Serve returned")

	require.Error(t, s.Serve(t.Context()), "a second Serve fails")
	require.False(t, healthy(), "and it stays unhealthy")
}

func TestService_Gate_holds_a_Controller_until_it_listens_and_says_so(t *testing.T) {
	s, _ := newService(t)
	tel := apptest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	g := s.Gate(tel.LoggerProvider.Logger("test"), "memcached", 30*time.Second)
	require.Equal(t, "kube webhooks (localhost:9443)", g.Name)
	require.Equal(t, 30*time.Second, g.Bound)
	require.Equal(t, s.Ready(), g.Open)
	require.Empty(t, tel.Records(), "nothing is said before the Controller waits")

	g.Waiting()
	g.Passed()
	records := tel.Records()
	require.Len(t, records, 2)
	for i, want := range []struct {
		severity log.Severity
		body     string
	}{
		{log.SeverityInfo, "waiting for the webhooks to serve"},
		{log.SeverityWarn, "the webhooks did not serve within 30s: carrying on without them"},
	} {
		r := records[i]
		require.Equal(t, want.severity, r.Severity())
		require.Equal(t, want.severity.String(), r.SeverityText())
		require.Equal(t, want.body, r.Body().AsString())
		require.False(t, r.Timestamp().IsZero())
		attrs := map[string]string{}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			attrs[string(kv.Key)] = kv.Value.AsString()
			return true
		})
		require.Equal(t, map[string]string{
			string(webhook.ControllerNameKey): "memcached",
			string(webhook.AddressKey):        "localhost:9443",
		}, attrs)
	}
}
