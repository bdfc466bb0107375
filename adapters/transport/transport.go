package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/domain/points"
)

// HTTP/2 health checking: a ping after ReadIdleTimeout without a frame,
// and the connection dropped when PingTimeout passes without the answer,
// so a watch on a dead connection doesn't wait for TCP to give up.
const (
	ReadIdleTimeout = 30 * time.Second
	PingTimeout     = 15 * time.Second
)

// Options is what New builds a transport from.
type Options struct {
	// Server is the API server's host:port.
	Server string
	// Dial connects to the API server, such as an app.Host's Dial.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// TLS is cloned; its ServerName defaults to Server's host.
	TLS *tls.Config
	// Token returns the bearer token; nil sends no Authorization header.
	Token func(context.Context) (string, error)

	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator

	// Gzip asks the API server to compress its answers and watch events,
	// which the transport then decompresses: for an API server reached
	// over a slow link. Off, the default, it asks for no compression.
	Gzip bool

	// RequestCounts, with a MeterProvider, counts every request, a
	// watch's included, in rest_client_requests_total{code,method,host},
	// as controller-runtime exports client-go's: the outermost layer.
	RequestCounts bool

	// Inject, when not nil, wraps the layers below tracing: the failure
	// injection layer, which must see each request inside its span and
	// before its token is fetched.
	Inject func(next http.RoundTripper) http.RoundTripper
}

// Transport is the composed RoundTripper, with the base transport and the
// connections it dialed kept so that they can be closed at shutdown.
type Transport struct {
	http.RoundTripper
	base  *http.Transport
	conns *conns
}

// CloseIdleConnections closes the connections no request is using.
func (t *Transport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// CloseConnections closes every connection the transport has open, idle
// or in use. A request still in flight fails with a closed connection; a
// later request dials a new one. It is for shutdown, once nothing should
// be using the transport any more.
func (t *Transport) CloseConnections() {
	t.base.CloseIdleConnections()
	t.conns.closeAll()
}

// New builds the layers the package doc lists. It fails when Server isn't
// host:port, or Dial or TLS is nil, naming every mistake, or when
// RequestCounts' instrument can't be made.
func New(o Options) (*Transport, error) {
	var errs []error
	host, _, err := net.SplitHostPort(o.Server)
	if err != nil {
		errs = append(errs, fmt.Errorf("server %q: %w", o.Server, err))
	}
	if o.Dial == nil {
		errs = append(errs, errors.New("dial: is nil"))
	}
	if o.TLS == nil {
		errs = append(errs, errors.New("tls: is nil"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	cfg := o.TLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	open := &conns{}
	base := &http.Transport{
		// Never http.ProxyFromEnvironment: nothing reads the real
		// environment behind the end user's back.
		Proxy:             nil,
		DialContext:       open.dial(o.Dial),
		TLSClientConfig:   cfg,
		ForceAttemptHTTP2: true,
		// No gzip unless asked: a controller runs beside its API
		// server, where compressing every response and watch event
		// costs both ends CPU and saves bandwidth nobody is short of.
		// Kubernetes' own controller manager and scheduler turn it off
		// for that reason (kubernetes#80919). With Gzip, Go's transport
		// asks for it and decompresses the answers itself.
		DisableCompression:  !o.Gzip,
		MaxIdleConnsPerHost: 25,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: ReadIdleTimeout,
			PingTimeout:     PingTimeout,
		},
	}

	var rt http.RoundTripper = base
	if o.Token != nil {
		rt = &bearer{tokens: &tokenCache{fetch: o.Token}, next: rt}
	}
	if o.Inject != nil {
		rt = o.Inject(rt)
	}
	var otelOpts []otelhttp.Option
	if o.TracerProvider != nil {
		otelOpts = append(otelOpts, otelhttp.WithTracerProvider(o.TracerProvider))
	}
	if o.MeterProvider != nil {
		otelOpts = append(otelOpts, otelhttp.WithMeterProvider(o.MeterProvider))
	}
	if o.Propagator != nil {
		otelOpts = append(otelOpts, otelhttp.WithPropagators(o.Propagator))
	}
	otelOpts = append(otelOpts,
		otelhttp.WithFilter(func(r *http.Request) bool { return !IsWatch(r) }),
		otelhttp.WithSpanNameFormatter(spanName),
	)
	rt = otelhttp.NewTransport(rt, otelOpts...)
	if o.RequestCounts && o.MeterProvider != nil {
		counter, err := newRequestCounter(rt, o.MeterProvider)
		if err != nil {
			return nil, err
		}
		rt = counter
	}
	return &Transport{RoundTripper: rt, base: base, conns: open}, nil
}

// IsWatch reports whether r is a watch, as the API server tells one: the
// verb domain/points names it by, read from a watch parameter or one of
// the deprecated /watch/ paths.
func IsWatch(r *http.Request) bool {
	return points.Parse(r.Method, r.URL.Path, r.URL.Query()).Verb == points.Watch
}

// spanName names a request's span by its method, as OpenTelemetry's HTTP
// conventions name a client span with no route template.
func spanName(_ string, r *http.Request) string { return r.Method }
