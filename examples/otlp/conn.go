package otlp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/loam-dev/loam/app"
)

// conns are the connections New's exporters send through, one client or
// gRPC connection a signal, since each signal has its own endpoint and
// TLS files; close releases them all.
type conns struct {
	h          app.Host
	transports []*http.Transport
	grpcConns  []*grpc.ClientConn
}

// httpClient returns the HTTP client of s: the Host's dialer, no proxy,
// and s's TLS. Its Timeout is s's, though the exporters bound each export
// with s's Timeout themselves (timeoutSpans, timeoutMetrics), retries
// included.
//
// It returns the client's TLS configuration too: nil for http.
func (c *conns) httpClient(s Signal) (*http.Client, *tls.Config, error) {
	var cfg *tls.Config
	if isHTTPS(s.Endpoint) {
		var err error
		if cfg, err = tlsConfig(s); err != nil {
			return nil, nil, err
		}
	}
	transport := &http.Transport{
		// The Host's network, never the real one; no proxy, since
		// net/http's default would read HTTPS_PROXY from the real
		// environment.
		DialContext:           dial(c.h),
		Proxy:                 nil,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       cfg,
	}
	c.transports = append(c.transports, transport)
	return &http.Client{Transport: transport, Timeout: s.Timeout}, cfg, nil
}

// grpcConn returns a gRPC connection to s's endpoint, dialled lazily
// through the Host's network, with no proxy and no DNS of gRPC's own
// (the passthrough resolver hands the Host the name), TLS for an https
// endpoint and plaintext for an http one, and gzip on every call when s
// says so.
func (c *conns) grpcConn(s Signal) (*grpc.ClientConn, error) {
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("the endpoint %q: %w", s.Endpoint, err)
	}
	creds := insecure.NewCredentials()
	host := u.Host
	if u.Scheme == "https" {
		cfg, err := tlsConfig(s)
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "443")
		}
	} else if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	if c.h.Network == nil {
		return nil, errNoNetwork
	}
	network := c.h.Network
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, address string) (net.Conn, error) {
			return network.Dial(ctx, "tcp", address)
		}),
		grpc.WithNoProxy(),
	}
	if s.Gzip {
		opts = append(opts, grpc.WithDefaultCallOptions(grpc.UseCompressor(gzip.Name)))
	}
	conn, err := grpc.NewClient("passthrough:///"+host, opts...)
	if err != nil {
		return nil, fmt.Errorf("the gRPC connection to %s: %w", host, err)
	}
	c.grpcConns = append(c.grpcConns, conn)
	return conn, nil
}

// close closes the idle HTTP connections and every gRPC connection.
func (c *conns) close() error {
	for _, t := range c.transports {
		t.CloseIdleConnections()
	}
	var errs []error
	for _, conn := range c.grpcConns {
		errs = append(errs, conn.Close())
	}
	return errors.Join(errs...)
}

// errNoNetwork is New's error for a Host without a Network.
var errNoNetwork = errors.New("otlp: the Host has no Network to dial the collector through: build the telemetry with app.WithHostTelemetry")

// isHTTPS reports whether endpoint is an https URL.
func isHTTPS(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return err == nil && u.Scheme == "https"
}

// dial returns h's dialer, or nil when h has no Network, which New
// refuses when anything is exported.
func dial(h app.Host) func(ctx context.Context, network, address string) (net.Conn, error) {
	if h.Network == nil {
		return nil
	}
	return h.Dial
}
