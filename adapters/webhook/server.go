// Package webhook is the HTTPS server of an App's admission and conversion
// webhooks (issue #21): it reads each review the API server POSTs to a
// Route's path, hands it to domain/webhook with the Route's Admitter or
// Converter, and writes the response back, with a span, metrics and log
// records for each review. It listens through the Setup's Host, with the
// certificate tlsfiles reads and reloads.
//
// It speaks HTTP/1.1 only: the API server's webhook client falls back to
// it, and a webhook gains nothing from HTTP/2's multiplexing that is worth
// its exposure to floods of streams.
//
// # Telemetry
//
// Spans, records and instruments are in the scope
// github.com/loam-dev/loam/kube, as the controllers'. Each review on a
// Route is one server span, in the trace of the API server's traceparent
// when the Propagator finds one, named by the Route's Type and the
// reviewed kind: "validate Memcached", "mutate Pod", "convert Memcached";
// a request refused before its body is read as a review (a wrong method,
// Content-Type or timeout, an oversize body) has the verb alone, such as
// "validate". Its attributes are those of the keys below; a review that
// fails or panics has the status Error. A Route is served at its Path
// under any prefix too (Route.Path says why); a path that is no Route's,
// with or without a prefix, is answered with 404 and reported nowhere.
//
// The baggage the Propagator finds goes on into the review's context, but
// for the members of the App's failure-injection Decoder (Config.Faults):
// a scenario in a review's header is stripped, with the event
// loam.fit.strip on its span, so an Admitter or a Converter, and the
// Client requests they make, never run under one.
//
// A denial is a WARN record "admission denied" with the message as
// exception.message, as loam's records of a failure carry theirs; a review
// that fails is a WARN record "review failed", the same way; a panic is an
// ERROR record "webhook panicked" with exception.type, exception.message
// (the panic's value) and exception.stacktrace. Each carries the span's
// attributes. A panic outside the Admitter and the Converter (a bug of the
// Server's, of its telemetry's, of a library's) is answered 200 all the
// same, with the review's uid, and recorded as "webhook panicked" too.
//
// Two instruments serve a dashboard: loam.kube.webhook.review.duration, a
// histogram in seconds of every request to a Route, by
// loam.kube.webhook.name, loam.kube.webhook.type and
// loam.kube.webhook.review.outcome, whose count is the rate of reviews and
// denials and whose buckets show how close they come to the API server's
// timeout; and loam.kube.webhook.reviews.active, an up-down counter of the
// reviews in flight by loam.kube.webhook.name and loam.kube.webhook.type,
// which shows a webhook stuck in its handler before the API server's
// timeouts do.
package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/httpserve"
	"github.com/loam-dev/loam/app/tlsfiles"
	domain "github.com/loam-dev/loam/domain/webhook"
	"github.com/loam-dev/loam/ports"
)

// ScopeName is the instrumentation scope of the Server's spans, records
// and instruments: the controllers' scope, so that one view shows both.
const ScopeName = "github.com/loam-dev/loam/kube"

// The names of the Server's instruments.
const (
	ReviewDurationName = "loam.kube.webhook.review.duration"
	ReviewsActiveName  = "loam.kube.webhook.reviews.active"
)

// The attributes of the Server's spans, records and data points.
const (
	// NamespaceKey is the reviewed object's namespace, when it has one.
	NamespaceKey = attribute.Key("k8s.namespace.name")
	// ObjectNameKey is the reviewed object's name, when it has one.
	ObjectNameKey = attribute.Key("loam.kube.object.name")
	// ObjectKindKey is the reviewed object's kind, such as Memcached.
	ObjectKindKey = attribute.Key("loam.kube.object.kind")
	// ObjectAPIVersionKey is the reviewed object's apiVersion, such as
	// cache.example.com/v1alpha1 or v1.
	ObjectAPIVersionKey = attribute.Key("loam.kube.object.api_version")
	// OperationKey is an admission's operation, such as CREATE.
	OperationKey = attribute.Key("loam.kube.webhook.operation")
	// NameKey is the Route's Name; on every data point.
	NameKey = attribute.Key("loam.kube.webhook.name")
	// TypeKey is the Route's Type: validating, mutating or conversion; on
	// every data point.
	TypeKey = attribute.Key("loam.kube.webhook.type")
	// OutcomeKey is how the review ended: allowed, denied, error or
	// panic; on review.duration's data points. A conversion that
	// succeeds is allowed, one that fails is error, and so is every
	// request the Server refuses before it reaches domain/webhook.
	OutcomeKey = attribute.Key("loam.kube.webhook.review.outcome")
	// UIDKey is the review's uid, which the API server's audit log has
	// too.
	UIDKey = attribute.Key("loam.kube.webhook.review.uid")

	exceptionTypeKey    = attribute.Key("exception.type")
	exceptionMessageKey = attribute.Key("exception.message")
	exceptionStackKey   = attribute.Key("exception.stacktrace")
)

// HTTP bounds of clients that misbehave: the API server sends its
// headers at once and keeps its connections for later reviews.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 90 * time.Second
)

// Type is what a Route's reviews are.
type Type int

// The Types of Route. The zero Type is none, a mistake New reports.
const (
	// Validating routes admission reviews to an Admitter whose result's
	// Object is ignored.
	Validating Type = iota + 1
	// Mutating routes admission reviews to an Admitter whose result's
	// Object becomes the response's JSON patch.
	Mutating
	// Conversion routes conversion reviews to a Converter.
	Conversion
)

// String returns the Type as TypeKey's value: validating, mutating or
// conversion, or Type(n) for another.
func (t Type) String() string {
	switch t {
	case Validating:
		return "validating"
	case Mutating:
		return "mutating"
	case Conversion:
		return "conversion"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// verb names a review of the Type in its span's name.
func (t Type) verb() string {
	switch t {
	case Validating:
		return "validate"
	case Mutating:
		return "mutate"
	}
	return "convert"
}

// Route is one webhook the Server serves: the reviews POSTed to Path.
type Route struct {
	// Path is where the API server POSTs the reviews, such as
	// /validate/cache.example.com/v1alpha1/memcacheds; it starts with a
	// slash. The Route is served at Path and at Path under any prefix,
	// such as /hooks/validate/…, which a Service's path or a URL's puts
	// in front of it in the configurations: the server need not be told
	// the prefix, so it can't be told a different one.
	Path string
	// Name names the webhook in telemetry, as NameKey's value, such as
	// the webhook configuration's name of it.
	Name string
	// Type is what the reviews are.
	Type Type
	// Admitter decides a Validating or Mutating Route's reviews; nil for
	// a Conversion Route.
	Admitter ports.Admitter
	// Converter converts a Conversion Route's objects; nil for the
	// others.
	Converter ports.Converter
}

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

// route is a Route with its data points' attributes, made once.
type route struct {
	Route
	attrs    []attribute.KeyValue // NameKey and TypeKey
	active   metric.AddOption
	outcomes map[domain.Result]metric.RecordOption
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

// route returns the Route served at path: the Route whose Path is path,
// or else the one whose Path is the longest suffix of path that starts
// at a slash, which is path with a prefix taken off.
func (s *Server) route(path string) (*route, bool) {
	for p := path; p != ""; {
		if rt, ok := s.routes[p]; ok {
			return rt, true
		}
		i := strings.IndexByte(p[1:], '/')
		if i < 0 {
			break
		}
		p = p[i+1:]
	}
	return nil, false
}

// ServeHTTP answers one request: a review POSTed to a Route's path. A
// panic anywhere in it, not only in the Admitter or the Converter, is
// answered 200 with a denial or a failed conversion (lastResort).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.route(r.URL.Path)
	if !ok {
		http.Error(w, fmt.Sprintf("no webhook is served at %s", r.URL.Path), http.StatusNotFound)
		return
	}
	start := time.Now()
	a := &answer{ResponseWriter: w}
	// A last resort, registered first so it runs last: a panic anywhere
	// below that escaped would have net/http close the connection, a
	// failed call, which FailurePolicy Ignore admits.
	defer func() {
		if v := recover(); v != nil {
			s.lastResort(rt, a, r, start, v, debug.Stack())
		}
	}()
	s.active.Add(r.Context(), 1, rt.active)
	defer s.active.Add(r.Context(), -1, rt.active)

	ctx := s.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.tracer.Start(ctx, rt.Type.verb(), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(rt.attrs...))
	defer span.End()
	// A scenario comes only from a trusted object, never from a request's
	// header: the review's own is stripped, as the Client strips one on
	// the wire, with loam.fit.strip on the review's span, whether failure
	// injection is on or off.
	ctx = s.faults.StripContext(ctx)

	o := s.review(ctx, rt, a, r)
	if o.Kind != "" {
		span.SetName(rt.Type.verb() + " " + o.Kind)
	}
	attrs := append(reviewAttributes(o), rt.attrs...)
	span.SetAttributes(attrs...)
	switch o.Result {
	case domain.Denied:
		s.emit(ctx, log.SeverityWarn, "admission denied", append(attrs, exceptionMessageKey.String(o.Message)))
	case domain.Errored:
		span.SetStatus(codes.Error, o.Message)
		s.emit(ctx, log.SeverityWarn, "review failed", append(attrs, exceptionMessageKey.String(o.Message)))
	case domain.Panicked:
		span.SetStatus(codes.Error, o.Message)
		exception := []attribute.KeyValue{
			exceptionTypeKey.String(fmt.Sprintf("%T", o.Panic)),
			exceptionMessageKey.String(fmt.Sprint(o.Panic)),
			exceptionStackKey.String(string(o.Stack)),
		}
		span.AddEvent("exception", trace.WithAttributes(exception...))
		s.emit(ctx, log.SeverityError, "webhook panicked", append(attrs, exception...))
	}
	s.duration.Record(ctx, time.Since(start).Seconds(), rt.outcomes[o.Result])
}

// review reads r's body, decides it with rt, and writes the answer,
// returning the Outcome. A request refused before it is decided is
// answered with its status and a message, and returned as an Errored
// Outcome saying why.
func (s *Server) review(ctx context.Context, rt *route, w *answer, r *http.Request) domain.Outcome {
	refuse := func(code int, msg string) domain.Outcome {
		http.Error(w, msg, code)
		return domain.Outcome{Status: code, Result: domain.Errored, Message: msg}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return refuse(http.StatusMethodNotAllowed, fmt.Sprintf("webhook %s: method %s, want POST", rt.Name, r.Method))
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return refuse(http.StatusUnsupportedMediaType, fmt.Sprintf("webhook %s: Content-Type is %q, want application/json", rt.Name, r.Header.Get("Content-Type")))
	}
	if t := r.URL.Query().Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return refuse(http.StatusBadRequest, fmt.Sprintf("webhook %s: the timeout parameter %q is not a positive duration", rt.Name, t))
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d,
			fmt.Errorf("webhook %s: the API server's timeout of %s for the review passed", rt.Name, d))
		defer cancel()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.max))
	w.body, w.read = body, true
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("webhook %s: the review is larger than %d bytes", rt.Name, s.max))
		}
		return refuse(http.StatusBadRequest, fmt.Sprintf("webhook %s: reading the review: %v", rt.Name, err))
	}

	var o domain.Outcome
	switch rt.Type {
	case Conversion:
		o = domain.Convert(ctx, body, rt.Converter)
	default:
		o = domain.Admit(ctx, body, rt.Type == Mutating, rt.Admitter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(o.Status)
	// The API server may have gone: nothing is left to tell it.
	_, _ = w.Write(o.Body)
	return o
}

// reviewAttributes returns the attributes naming what o reviewed.
func reviewAttributes(o domain.Outcome) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	add := func(k attribute.Key, v string) {
		if v != "" {
			attrs = append(attrs, k.String(v))
		}
	}
	add(NamespaceKey, o.Namespace)
	add(ObjectNameKey, o.Name)
	add(ObjectKindKey, o.Kind)
	apiVersion := o.Version
	if o.Group != "" {
		apiVersion = o.Group + "/" + o.Version
	}
	add(ObjectAPIVersionKey, apiVersion)
	add(OperationKey, o.Operation)
	add(UIDKey, o.UID)
	attrs = append(attrs, OutcomeKey.String(string(o.Result)))
	return attrs
}

// emit emits a record of severity with body and attrs.
func (s *Server) emit(ctx context.Context, severity log.Severity, body string, attrs []attribute.KeyValue) {
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(severity)
	r.SetSeverityText(severity.String())
	r.SetBody(attribute.StringValue(body))
	r.AddAttributes(attrs...)
	s.logger.Emit(ctx, r)
}
