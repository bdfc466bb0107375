package httpserve_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/log/noop"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/httpserve"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// start serves c until the test ends, returning the Server once it
// listens.
func start(t *testing.T, c httpserve.Config) *httpserve.Server {
	t.Helper()
	s := httpserve.New(c)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, s.Shutdown(context.Background()))
	})
	select {
	case <-s.Ready():
	case err := <-served:
		t.Fatalf("Serve returned before it listened: %v", err)
	}
	return s
}

func hello(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil {
		_, _ = io.WriteString(w, "plain")
		return
	}
	_, _ = io.WriteString(w, "tls")
}

func TestServer_serves_HTTPS_when_the_Config_has_TLS(t *testing.T) {
	tests := []struct {
		name string
		tls  bool
		want string
	}{
		{name: "plain HTTP without a TLS configuration", want: "plain"},
		{name: "HTTPS with one", tls: true, want: "tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := apptest.NewHost(t)
			ca := apptest.NewCA(t)
			c := httpserve.Config{
				Package: "httpserve_test", What: "hello", Network: h.Network, Address: "localhost:0",
				Handler: http.HandlerFunc(hello), Logger: noop.NewLoggerProvider().Logger("test"),
				ReadHeaderTimeout: time.Second,
			}
			scheme := "http"
			if tt.tls {
				c.TLS = ca.ServerConfig("localhost", "127.0.0.1")
				scheme = "https"
			}
			s := start(t, c)
			require.NotNil(t, s.Addr())

			tr := &http.Transport{DialContext: h.Dial, TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}}
			defer tr.CloseIdleConnections()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, scheme+"://"+s.Addr().String()+"/", nil)
			require.NoError(t, err)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(body))
		})
	}
}

func TestServer_Addr_is_nil_and_Ready_open_before_Serve(t *testing.T) {
	s := httpserve.New(httpserve.Config{Logger: noop.NewLoggerProvider().Logger("test")})
	require.Nil(t, s.Addr())
	select {
	case <-s.Ready():
		t.Fatal("Ready is closed before Serve")
	default:
	}
}
