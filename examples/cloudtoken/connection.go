package cloudtoken

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
)

// Connection returns the Connection of the API server at endpoint, which
// is https://host[:port] or host[:port], as each cloud reports it (port 443
// when it names none), trusting only the CA certificates in caPEM, with
// token as its Token. It reports every mistake together, in one error: an
// endpoint that is no https address of a host, a caPEM that holds no PEM
// certificate, and a nil token.
func Connection(endpoint string, caPEM []byte, token func(context.Context) (string, error)) (kube.Connection, error) {
	var errs []error
	server, err := hostPort(endpoint)
	if err != nil {
		errs = append(errs, fmt.Errorf("the endpoint %q: %w", endpoint, err))
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		errs = append(errs, errors.New("the CA holds no PEM certificate"))
	}
	if token == nil {
		// A nil Token sends no Authorization header: a cloud's API
		// server would answer every request as anonymous.
		errs = append(errs, errors.New("the Token function is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return kube.Connection{}, err
	}
	return kube.Connection{
		Server: server,
		TLS:    &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		Token:  token,
	}, nil
}

// hostPort returns endpoint's host:port, with port 443 when it names none.
func hostPort(endpoint string) (string, error) {
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "https":
		return "", fmt.Errorf("the scheme is %q, not https", u.Scheme)
	case u.Hostname() == "":
		return "", errors.New("it names no host")
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		// A Connection dials host:port and sends each request to the
		// API's own paths: anything else in the address would be lost.
		return "", errors.New("it has more than a host and a port")
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	server := net.JoinHostPort(u.Hostname(), port)
	return server, kube.CheckServer(server)
}

// HTTPClient returns an HTTP client for a cloud SDK's own requests, such
// as those that fetch a token or describe a cluster, that dials through
// s.Host rather than the machine's network, so that a test's Host reaches
// them too. It uses no proxy. Its idle connections are closed when the App
// stops. It cannot fail.
func HTTPClient(s *app.Setup) *http.Client {
	t := &http.Transport{
		DialContext:           s.Host.Dial,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   2,
	}
	s.OnStop(func(context.Context) error {
		t.CloseIdleConnections()
		return nil
	})
	return &http.Client{Transport: t, Timeout: time.Minute}
}
