package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/httpserve"
	"github.com/loam-dev/loam/app/tlsfiles"
	domain "github.com/loam-dev/loam/domain/webhook"
)

// HTTP bounds of clients that misbehave: the API server sends its
// headers at once and keeps its connections for later reviews.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 90 * time.Second
)

// Config is what a Server serves, where, and what it reports through.
type Config struct {
	// Network is the Setup's Host's, which Serve listens through.
	Network app.Network
	// Address is where Serve listens, such as :9443.
	Address string
	// Certificate is the serving certificate; Serve runs its reloads.
	Certificate *tlsfiles.Certificate
	// Routes are the webhooks served, each on a path of its own.
	Routes []Route
	// MaxRequestBytes bounds a review's body; a larger one is answered
	// with 413.
	MaxRequestBytes int64
	// TracerProvider, MeterProvider and Propagator are the Setup's.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
	// Faults is the App's failure injection, whose scenario a review's
	// baggage header may carry: it is stripped before the review is
	// decided, since scenarios come only from trusted objects. Nil is
	// inert.
	Faults *fault.Injector
	// Logger takes the Server's records, and those of net/http.
	Logger log.Logger
}

// Server serves a Config's Routes over HTTPS, as an app.Service's Serve
// and Shutdown. New makes one.
type Server struct {
	http        *httpserve.Server
	certificate *tlsfiles.Certificate
	routes      map[string]*route
	max         int64
	tracer      trace.Tracer
	propagator  propagation.TextMapPropagator
	faults      *fault.Injector
	logger      log.Logger

	duration metric.Float64Histogram
	active   metric.Int64UpDownCounter
}

// New returns a Server for c. It opens nothing: Serve listens. It fails,
// naming every mistake at once, when c has no Network, Address,
// Certificate, Logger or provider, a MaxRequestBytes below 1, no Route,
// or a Route without a Name, with a Path that does not start with a slash
// or that another Route has, with an unknown Type, or without the
// Admitter or Converter its Type needs, or with the other.
func New(c Config) (*Server, error) {
	if err := check(c); err != nil {
		return nil, err
	}
	s := &Server{
		certificate: c.Certificate,
		routes:      make(map[string]*route, len(c.Routes)),
		max:         c.MaxRequestBytes,
		tracer:      c.TracerProvider.Tracer(ScopeName),
		propagator:  c.Propagator,
		faults:      c.Faults,
		logger:      c.Logger,
	}
	meter := c.MeterProvider.Meter(ScopeName)
	var err error
	if s.duration, err = meter.Float64Histogram(ReviewDurationName,
		metric.WithUnit("s"),
		metric.WithDescription("How long each review took, by webhook and outcome."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30)); err != nil {
		return nil, fmt.Errorf("webhook: instrument %s: %w", ReviewDurationName, err)
	}
	if s.active, err = meter.Int64UpDownCounter(ReviewsActiveName,
		metric.WithUnit("{review}"),
		metric.WithDescription("The reviews in flight, by webhook.")); err != nil {
		return nil, fmt.Errorf("webhook: instrument %s: %w", ReviewsActiveName, err)
	}
	for _, r := range c.Routes {
		attrs := []attribute.KeyValue{NameKey.String(r.Name), TypeKey.String(r.Type.String())}
		rt := &route{
			Route:    r,
			attrs:    attrs,
			active:   metric.WithAttributeSet(attribute.NewSet(attrs...)),
			outcomes: make(map[domain.Result]metric.RecordOption, 4),
		}
		for _, o := range []domain.Result{domain.Allowed, domain.Denied, domain.Errored, domain.Panicked} {
			rt.outcomes[o] = metric.WithAttributeSet(attribute.NewSet(append(attrs[:len(attrs):len(attrs)], OutcomeKey.String(string(o)))...))
		}
		s.routes[r.Path] = rt
	}

	tlsConfig := c.Certificate.TLSConfig()
	// A webhook's client is the API server, which speaks TLS 1.2 at the
	// least; nothing older is offered even when the Settings allow it.
	tlsConfig.MinVersion = max(tlsConfig.MinVersion, tls.VersionTLS12)
	tlsConfig.NextProtos = []string{"http/1.1"}
	s.http = httpserve.New(httpserve.Config{
		Package:           "webhook",
		What:              "webhooks",
		Network:           c.Network,
		Address:           c.Address,
		Handler:           s,
		Logger:            c.Logger,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		TLS:               tlsConfig,
	})
	return s, nil
}

// check returns every mistake in c, joined.
func check(c Config) error {
	var errs []error
	missing := func(field string, isNil bool) {
		if isNil {
			errs = append(errs, fmt.Errorf("webhook: Config.%s is nil", field))
		}
	}
	missing("Network", c.Network == nil)
	missing("Certificate", c.Certificate == nil)
	missing("TracerProvider", c.TracerProvider == nil)
	missing("MeterProvider", c.MeterProvider == nil)
	missing("Propagator", c.Propagator == nil)
	missing("Logger", c.Logger == nil)
	if c.Address == "" {
		errs = append(errs, errors.New("webhook: Config.Address is empty"))
	}
	if c.MaxRequestBytes < 1 {
		errs = append(errs, fmt.Errorf("webhook: Config.MaxRequestBytes is %d, below 1", c.MaxRequestBytes))
	}
	if len(c.Routes) == 0 {
		errs = append(errs, errors.New("webhook: Config.Routes is empty"))
	}
	paths := make(map[string]int, len(c.Routes))
	for i, r := range c.Routes {
		field := fmt.Sprintf("webhook: Config.Routes[%d] (%q)", i, r.Path)
		if !strings.HasPrefix(r.Path, "/") {
			errs = append(errs, fmt.Errorf("%s: Path does not start with a slash", field))
		}
		if j, ok := paths[r.Path]; ok {
			errs = append(errs, fmt.Errorf("%s: Path is Routes[%d]'s too", field, j))
		} else {
			paths[r.Path] = i
		}
		if r.Name == "" {
			errs = append(errs, fmt.Errorf("%s: Name is empty", field))
		}
		switch r.Type {
		case Validating, Mutating:
			if r.Admitter == nil {
				errs = append(errs, fmt.Errorf("%s: Admitter is nil for a %s Route", field, r.Type))
			}
			if r.Converter != nil {
				errs = append(errs, fmt.Errorf("%s: Converter is set on a %s Route, which has no conversions", field, r.Type))
			}
		case Conversion:
			if r.Converter == nil {
				errs = append(errs, fmt.Errorf("%s: Converter is nil for a conversion Route", field))
			}
			if r.Admitter != nil {
				errs = append(errs, fmt.Errorf("%s: Admitter is set on a conversion Route, which has no admissions", field))
			}
		default:
			errs = append(errs, fmt.Errorf("%s: Type is %s, not Validating, Mutating or Conversion", field, r.Type))
		}
	}
	return errors.Join(errs...)
}

// Serve listens on the Address through the Network with TLS, and answers
// reviews until ctx ends or Shutdown is called, then returns nil. It runs
// the Certificate's reloads meanwhile, and waits for them to stop before
// it returns. It returns an error when it cannot listen, when accepting
// fails, or when it is called a second time.
func (s *Server) Serve(ctx context.Context) error {
	reloadCtx, stopReloads := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.certificate.Run(reloadCtx) }) // Run never fails.
	defer wg.Wait()
	defer stopReloads()
	return s.http.Serve(ctx)
}

// Shutdown stops the Server: it stops accepting requests, so Serve
// returns nil, and waits for the reviews in flight to be answered. When
// ctx ends first, it closes their connections and returns an error
// wrapping ctx's.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Ready returns a channel closed once Serve listens.
func (s *Server) Ready() <-chan struct{} { return s.http.Ready() }

// Addr returns the address Serve listens on, or nil before it does.
func (s *Server) Addr() net.Addr { return s.http.Addr() }
