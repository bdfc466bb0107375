package kube

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/adapters/informer"
	reporting "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/adapters/transport"
	"github.com/loam-dev/loam/app"
)

// Client reaches one API server through the App's Host. It opens no
// connection until a client built from Config sends a request.
type Client struct {
	server    string
	transport *transport.Transport
	// applies is the REST client of Resource.Apply, built on the first
	// apply and shared by the rest.
	applies func() (*rest.RESTClient, error)
	// informers is the registry the Controllers built on the Client draw
	// their informers from: one list, one watch and one store per
	// resource, view, namespace, selectors and transform, whatever the
	// number of Owns, Watches and Caches that read it.
	informers *informer.Registry
}

// CheckServer reports whether server is the host:port of an API server,
// with a host and a port between 1 and 65535. It returns nil when it is.
func CheckServer(server string) error { return transport.CheckServer(server) }

// CheckTLS reports whether cfg can reach an API server: it is required,
// verifies the server's certificate, and allows no version below TLS 1.2.
// It returns nil when it can.
func CheckTLS(cfg *tls.Config) error { return transport.CheckTLS(cfg) }

// NewClient returns a Client that reaches conn's API server through s's
// Host, traced and measured on s's Telemetry, with s's failure injector at
// every request. It checks s and every field of conn and reports every
// mistake in one error; it opens no connection. When the App stops, after
// every Service has returned, the Client closes its connections: the idle
// ones and any a request still holds, such as a watch whose stream is
// still being torn down, which would otherwise keep its connection and its
// read loop for 90 seconds. A request made later, from an OnStop hook,
// dials anew.
//
// opts change what the Client asks of the API server: WithGzip. A nil
// option is a mistake NewClient reports.
func NewClient(s *app.Setup, conn Connection, opts ...ClientOption) (*Client, error) {
	cfg, errs := applyClientOptions(opts)
	if s == nil {
		errs = append(errs, errors.New("kube: NewClient: the Setup is nil"))
	} else if s.Host.Network == nil {
		errs = append(errs, errors.New("kube: NewClient: the Setup's Host has no Network"))
	}
	if err := CheckServer(conn.Server); err != nil {
		errs = append(errs, fmt.Errorf("kube: Connection.Server: %w", err))
	}
	if err := CheckTLS(conn.TLS); err != nil {
		errs = append(errs, fmt.Errorf("kube: Connection.TLS: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	topts := transport.Options{
		Server:         conn.Server,
		Dial:           s.Host.Dial,
		TLS:            conn.TLS,
		Token:          conn.Token,
		TracerProvider: s.Telemetry.TracerProvider,
		MeterProvider:  s.Telemetry.MeterProvider,
		Propagator:     s.Telemetry.Propagator,
		Gzip:           cfg.gzip,
		RequestCounts:  s.Telemetry.MetricNames == app.MetricNamesControllerRuntime,
	}
	if s.Faults.Enabled() {
		// Without failure injection the transport has no such layer at all.
		topts.Inject = transport.InjectFaults(s.Faults)
	}
	t, err := transport.New(topts)
	if err != nil {
		return nil, fmt.Errorf("kube: NewClient: %w", err)
	}
	s.OnStop(func(context.Context) error {
		t.CloseConnections()
		return nil
	})
	// The shared informers are the Client's, not one Controller's: their
	// client-go records name the Client's server, and each its store.
	logger := reporting.NewLogger(loggerOf(s), attribute.String("server", conn.Server))
	c := &Client{server: conn.Server, transport: t, informers: informer.NewRegistry(logger)}
	c.applies = apply.Lazy(c.Config)
	return c, nil
}

// Config returns a new rest.Config for client-go's clients — the
// clientset of kubernetes.NewForConfig, the dynamic and the metadata
// clients — each of which then sends its requests through the Client's
// transport. Changing the returned Config changes no other.
//
// Its QPS is negative, which turns client-go's client-side rate limit off:
// the API server's priority and fairness limits each client by its
// identity, and client-go's default of 5 requests a second throttles a
// busy controller. It sets no Timeout, so a request lasts as long as its
// context.
//
// It speaks protobuf, as controller-runtime's clients do for Kubernetes'
// own kinds: a clientset of kubernetes.NewForConfig sends and reads
// protobuf, which costs a fraction of JSON to decode. It accepts JSON too,
// which the API server sends for what has no protobuf form, such as a
// custom resource, and the dynamic client asks for JSON alone. A client
// of custom resource types built on the Config sets ContentType to JSON
// for its own writes.
func (c *Client) Config() *rest.Config {
	return &rest.Config{
		Host:               "https://" + c.server,
		Transport:          c.transport,
		QPS:                -1,
		ContentType:        runtime.ContentTypeProtobuf,
		AcceptContentTypes: runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON,
	}
}

// RoundTripper returns the Client's transport, for an http.Client of the
// end user's own that reaches the API server, such as one for a
// non-resource path.
func (c *Client) RoundTripper() http.RoundTripper { return c.transport }
