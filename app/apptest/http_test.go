package apptest_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/apptest"
)

// serve runs srv on l until the test ends, as TLS when srv has a
// TLSConfig.
func serve(t *testing.T, srv *http.Server, l net.Listener) {
	t.Helper()
	served := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			served <- srv.ServeTLS(l, "", "")
			return
		}
		served <- srv.Serve(l)
	}()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
}

// whoAmI answers with the request's protocol and the client certificate's
// user and groups.
func whoAmI(w http.ResponseWriter, r *http.Request) {
	user, groups := "anonymous", ""
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		subject := r.TLS.PeerCertificates[0].Subject
		// DER sorts a SET OF, so the groups come back in their own order.
		user, groups = subject.CommonName, strings.Join(slices.Sorted(slices.Values(subject.Organization)), ",")
	}
	_, _ = fmt.Fprintf(w, "%s %s %s", r.Proto, user, groups)
}

// get returns the body, status and protocol version of a GET of url.
func get(t *testing.T, c *http.Client, url string) (body string, status, protoMajor int) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b), resp.StatusCode, resp.ProtoMajor
}

func TestNetwork_carries_HTTP_1_1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		l, err := h.Listen(t.Context(), "tcp", ":8080")
		require.NoError(t, err)
		serve(t, &http.Server{Handler: http.HandlerFunc(whoAmI), ReadHeaderTimeout: time.Second}, l)

		tr := &http.Transport{DialContext: h.Dial}
		defer tr.CloseIdleConnections()
		body, status, _ := get(t, &http.Client{Transport: tr}, "http://localhost:8080/")
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, "HTTP/1.1 anonymous ", body)
	})
}

func TestNetwork_carries_HTTP_2_over_TLS_with_the_CA_s_certificates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		ca := apptest.NewCA(t)
		l, err := h.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		serve(t, &http.Server{
			Handler:           http.HandlerFunc(whoAmI),
			TLSConfig:         ca.ServerConfig("api.test", "10.96.0.1"),
			ReadHeaderTimeout: time.Second,
		}, l)

		client := ca.ClientCert("system:serviceaccount:default:loam", "system:serviceaccounts", "system:authenticated")
		tr := &http.Transport{
			DialContext:       h.Dial,
			ForceAttemptHTTP2: true,
			TLSClientConfig: &tls.Config{
				RootCAs:      ca.Pool(),
				Certificates: []tls.Certificate{client.TLS},
				MinVersion:   tls.VersionTLS12,
			},
		}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr}

		for range 3 { // one connection carries every request
			body, _, protoMajor := get(t, c, "https://api.test/")
			require.Equal(t, 2, protoMajor)
			require.Equal(t, "HTTP/2.0 system:serviceaccount:default:loam system:authenticated,system:serviceaccounts", body)
		}
	})
}

func TestNetwork_a_silent_partition_fails_an_HTTP_2_stream_by_its_ping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		ca := apptest.NewCA(t)
		l, err := h.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		// A watch: headers, then nothing until the client goes away.
		watch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			if err := http.NewResponseController(w).Flush(); err != nil {
				return
			}
			<-r.Context().Done()
		})
		serve(t, &http.Server{Handler: watch, TLSConfig: ca.ServerConfig("api.test"), ReadHeaderTimeout: time.Second}, l)

		tr := &http.Transport{
			DialContext:       h.Dial,
			ForceAttemptHTTP2: true,
			TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
			HTTP2:             &http.HTTP2Config{SendPingTimeout: 10 * time.Second, PingTimeout: 5 * time.Second},
		}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://api.test/watch", nil)
		require.NoError(t, err)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, 2, resp.ProtoMajor)

		// Nothing closes: the network just stops delivering.
		require.NoError(t, h.Partition("api.test:443"))
		start := time.Now()
		_, err = io.ReadAll(resp.Body)
		require.Error(t, err)
		require.False(t, errors.Is(err, io.EOF))
		require.Equal(t, 15*time.Second, time.Since(start), "no frame for SendPingTimeout, then no answer for PingTimeout")
	})
}
