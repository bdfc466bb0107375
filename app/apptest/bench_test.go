package apptest_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/apptest"
)

// BenchmarkConn_throughput streams 32 KiB writes through one connection.
func BenchmarkConn_throughput(b *testing.B) {
	n := apptest.NewNetwork()
	l, err := n.Listen(b.Context(), "tcp", "api.test:443")
	require.NoError(b, err)
	defer l.Close()
	drained := make(chan error, 1)
	go func() {
		s, err := l.Accept()
		if err != nil {
			drained <- err
			return
		}
		_, err = io.Copy(io.Discard, s)
		drained <- err
	}()
	c, err := n.Dial(b.Context(), "tcp", "api.test:443")
	require.NoError(b, err)

	chunk := make([]byte, 32<<10)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	require.NoError(b, c.Close())
	require.NoError(b, <-drained)
}

// BenchmarkNetwork_HTTP2_request sends GETs over one TLS HTTP/2
// connection.
func BenchmarkNetwork_HTTP2_request(b *testing.B) {
	h := apptest.NewHost(b)
	ca := apptest.NewCA(b)
	l, err := h.Listen(b.Context(), "tcp", "api.test:443")
	require.NoError(b, err)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) }),
		TLSConfig:         ca.ServerConfig("api.test"),
		ReadHeaderTimeout: time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(l, "", "") }()
	tr := &http.Transport{
		DialContext:       h.Dial,
		ForceAttemptHTTP2: true,
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
	}
	c := &http.Client{Transport: tr}

	for b.Loop() {
		req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, "https://api.test/", nil)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		if err := resp.Body.Close(); err != nil {
			b.Fatal(err)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	tr.CloseIdleConnections()
	require.NoError(b, srv.Close())
	require.ErrorIs(b, <-served, http.ErrServerClosed)
}
