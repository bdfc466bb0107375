package httpmetrics_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/app/tlsfiles"
)

// secured is a Service over TLS on a test Host, served until the test
// ends.
type secured struct {
	host     *apptest.Host
	ca       *apptest.CA
	settings tlsfiles.Settings
}

// serveTLS serves a Service with Settings.TLS naming files of a
// certificate for the test address, and opts, until the test ends.
func serveTLS(t *testing.T, opts ...httpmetrics.ServiceOption) secured {
	t.Helper()
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("metrics.test")
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"tls/tls.crt": cert.CertPEM, "tls/tls.key": cert.KeyPEM}))
	ts := tlsfiles.DefaultSettings()
	ts.CertFile, ts.KeyFile = host.Path("tls/tls.crt"), host.Path("tls/tls.key")

	exp, err := httpmetrics.NewExporter()
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	svc, err := httpmetrics.NewService(&app.Setup{Host: host.Host(), Telemetry: app.Telemetry{MeterProvider: mp}},
		httpmetrics.Settings{Address: address, TLS: &ts}, exp, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, svc.Shutdown(context.Background()))
	})
	<-svc.Ready()
	return secured{host: host, ca: ca, settings: ts}
}

// get sends GET path over a new TLS connection, with header as its
// Authorization unless empty, and returns the status and the serial
// number of the certificate the server presented.
func (s secured) get(t *testing.T, path, header string) (int, string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{
		DialContext:       s.host.Host().Dial,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: s.ca.Pool(), ServerName: "metrics.test", MinVersion: tls.VersionTLS12},
	}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+address+path, nil)
	require.NoError(t, err)
	if header != "" {
		req.Header.Set("Authorization", header)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.TLS.PeerCertificates[0].SerialNumber.String()
}

func TestMetricsOverTLSTakesARotatedCertificate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serveTLS(t)
		code, first := s.get(t, "/metrics", "")
		require.Equal(t, http.StatusOK, code)

		next := s.ca.ServerCert("metrics.test")
		s.host.WriteFile("tls/tls.crt", next.CertPEM)
		s.host.WriteFile("tls/tls.key", next.KeyPEM)
		time.Sleep(s.settings.ReloadInterval)
		synctest.Wait()

		code, second := s.get(t, "/metrics", "")
		require.Equal(t, http.StatusOK, code)
		require.NotEqual(t, first, second)
		require.Equal(t, next.Leaf.SerialNumber.String(), second, "the next handshake presents the rotated certificate")
	})
}

func TestAFilterSeesEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		letIn := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer friend" {
					http.Error(w, "who are you?", http.StatusUnauthorized)
					return
				}
				next.ServeHTTP(w, r)
			})
		}
		s := serveTLS(t, httpmetrics.WithFilter(letIn))
		for _, tt := range []struct {
			path, header string
			code         int
		}{
			{"/metrics", "", http.StatusUnauthorized},
			{"/metrics", "Bearer stranger", http.StatusUnauthorized},
			{"/metrics", "Bearer friend", http.StatusOK},
			{"/elsewhere", "", http.StatusUnauthorized},
		} {
			code, _ := s.get(t, tt.path, tt.header)
			require.Equal(t, tt.code, code, "%s with %q", tt.path, tt.header)
		}
	})
}

func TestNewServiceReportsTLSAndFilterMistakes(t *testing.T) {
	exp, err := httpmetrics.NewExporter()
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	setup := &app.Setup{Host: apptest.NewHost(t).Host(), Telemetry: app.Telemetry{MeterProvider: mp}}

	noFiles := tlsfiles.Settings{}
	_, err = httpmetrics.NewService(setup, httpmetrics.Settings{Address: address, TLS: &noFiles}, exp, httpmetrics.WithFilter(nil))
	require.Error(t, err)
	for _, want := range []string{
		"httpmetrics: WithFilter 0: nil Filter",
		"httpmetrics: Settings.TLS: tlsfiles: Settings.CertFile is empty",
		"Settings.KeyFile is empty",
		"Settings.ReloadInterval 0s is not positive",
	} {
		require.ErrorContains(t, err, want)
	}

	pass := func(next http.Handler) http.Handler { return next }
	_, err = httpmetrics.NewService(setup, httpmetrics.Settings{Address: address}, exp, httpmetrics.WithFilter(pass))
	require.EqualError(t, err, "httpmetrics: WithFilter without Settings.TLS: a scraper's bearer token would cross the network in the clear; set Settings.TLS")
}
