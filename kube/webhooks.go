package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/loam-dev/loam/adapters/webhook"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/tlsfiles"
	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/domain/webhookconfig"
	"github.com/loam-dev/loam/domain/webhookreach"
	"github.com/loam-dev/loam/ports"
)

// DefaultWebhookAddress is where DefaultWebhookSettings serves the
// webhooks: port 9443 on every interface, the port kubebuilder's
// operators use, so a Service written for one fits.
const DefaultWebhookAddress = ":9443"

// DefaultMaxRequestBytes bounds a review's body by default: 7 MiB. The API
// server accepts objects of up to 3 MiB, and an update's review carries
// the object twice, as it is and as it was, with the review around them;
// anything larger is no review the API server sends.
const DefaultMaxRequestBytes = 7 << 20

// WebhookSettings configures the Webhooks Service. It follows loam's
// settings convention: plain values, checked all at once, and
// DefaultWebhookSettings for a starting point.
type WebhookSettings struct {
	// Address is the host:port the webhooks are served on, such as
	// :9443, which the Service in front of them targets. Port 0 picks a
	// free port, which suits tests.
	Address string
	// TLS names the serving certificate's files, such as a mounted
	// kubernetes.io/tls Secret's /tls/tls.crt and /tls/tls.key, and how
	// often they are re-read for a rotation. The API server calls
	// webhooks over HTTPS only.
	TLS tlsfiles.Settings
	// MaxRequestBytes bounds a review's body; a larger one is answered
	// with 413 Request Entity Too Large.
	MaxRequestBytes int64
	// AwaitBound bounds how long each Controller of the App waits for
	// these Webhooks when it starts: for them to listen, and then for the
	// API server to reach their conversion, retrying a first check that
	// fails on it (docs/kubernetes.md, "Readiness and the Service"). From
	// 1s to 10m; DefaultWebhookSettings sets AwaitWebhooksBound.
	AwaitBound time.Duration
}

// DefaultWebhookSettings returns the WebhookSettings an Init starts from:
// DefaultWebhookAddress, tlsfiles.DefaultSettings (no files, which an Init
// always sources), DefaultMaxRequestBytes and AwaitWebhooksBound.
func DefaultWebhookSettings() WebhookSettings {
	return WebhookSettings{Address: DefaultWebhookAddress, TLS: tlsfiles.DefaultSettings(), MaxRequestBytes: DefaultMaxRequestBytes,
		AwaitBound: AwaitWebhooksBound}
}

// mistakes returns an error for each mistake in s but its TLS settings,
// which tlsfiles.New checks, named by field.
func (s WebhookSettings) mistakes() []error {
	var errs []error
	if s.Address == "" {
		errs = append(errs, errors.New(`kube: WebhookSettings.Address is empty: set host:port, such as ":9443"`))
	} else if _, port, err := net.SplitHostPort(s.Address); err != nil {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.Address %q is not host:port: %w", s.Address, err))
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.Address %q: the port %q is not a number from 0 to 65535", s.Address, port))
	}
	if s.MaxRequestBytes < 1 {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.MaxRequestBytes is %d: want at least 1, such as DefaultMaxRequestBytes", s.MaxRequestBytes))
	}
	if err := CheckWebhookAwaitBound(s.AwaitBound); err != nil {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.AwaitBound %w", err))
	}
	return errs
}

// The bounds of WebhookSettings.AwaitBound: at least a second, one retry
// of the first check (controller.CheckRetryInterval); at most ten
// minutes, past which a Controller that cannot list is better reported
// than waited for.
const (
	minWebhookAwaitBound = controller.CheckRetryInterval
	maxWebhookAwaitBound = 10 * time.Minute
)

// CheckWebhookAwaitBound checks a WebhookSettings.AwaitBound, as
// NewWebhooks does, for an Init's config.Validate: it fails unless bound
// is from 1s to 10m.
func CheckWebhookAwaitBound(bound time.Duration) error {
	if bound < minWebhookAwaitBound || bound > maxWebhookAwaitBound {
		return fmt.Errorf("is %v: want from %v to %v, such as AwaitWebhooksBound (%v)", bound, minWebhookAwaitBound, maxWebhookAwaitBound, AwaitWebhooksBound)
	}
	return nil
}

// Webhooks is the app.Service that serves an App's Hooks over HTTPS, on
// the Setup's Host, with the serving certificate re-read as it rotates.
// NewWebhooks makes one. Each review is a span, a duration and, when it is
// denied or panics, a log record, as docs/kubernetes.md's webhook
// telemetry says. A review's trace context is taken from its headers, but
// never a failure scenario: the members of the App's Decoder
// (fault.Settings.Decoder) are stripped from its baggage before the hook
// runs, so a hook, and the Client requests it makes, meet no fault from
// a header.
type Webhooks struct {
	service *webhook.Service
	// awaitBound is the Settings' AwaitBound, and conversions the paths
	// of the Conversion hooks, whose errors the App's Controllers retry.
	awaitBound  time.Duration
	conversions []string
}

// NewWebhooks returns the Webhooks serving hooks as settings say, through
// s's Host and Telemetry. It reads the serving certificate, so a missing
// or malformed file fails the App's Init, not its first review.
//
// It fails with one error naming every mistake: a nil Setup, a bad
// Address or MaxRequestBytes, every mistake in the TLS settings and every
// file that doesn't read or parse, no hooks at all, and every mistake in
// hooks:
// the zero Hook, a nil function, a mistake in a Resource or a Kind, an
// option out of range or given twice, two Hooks served at one path, and a
// Conversion hub whose versions don't check, as its CRD would report.
//
// The Webhooks are shared on s (app.Setup.Share): every Controller made
// on s, before or after, waits for them to listen when it starts, and
// retries its first check while the API server fails to reach their
// conversion, for at most settings' AwaitBound, as AwaitWebhooks does.
func NewWebhooks(s *app.Setup, settings WebhookSettings, hooks ...Hook) (*Webhooks, error) {
	if s == nil {
		return nil, errors.New("kube: the Setup is nil: pass the one Init is given")
	}
	errs := settings.mistakes()
	if len(hooks) == 0 {
		errs = append(errs, errors.New("kube: no Hook: pass Validate, Mutate, ValidateKind, MutateKind or Conversion Hooks"))
	}
	routes, mistakes := routesOf(hooks)
	errs = append(errs, mistakes...)
	logger := loggerOf(s)
	cert, err := tlsfiles.New(context.Background(), s.Host, settings.TLS, logger)
	if err != nil {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.TLS: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t := s.Telemetry
	service, err := webhook.NewService(webhook.Config{
		Network: s.Host.Network, Address: settings.Address, Certificate: cert, Routes: routes,
		MaxRequestBytes: settings.MaxRequestBytes,
		TracerProvider:  cmp.Or[trace.TracerProvider](t.TracerProvider, tracenoop.NewTracerProvider()),
		MeterProvider:   cmp.Or[metric.MeterProvider](t.MeterProvider, metricnoop.NewMeterProvider()),
		Propagator:      cmp.Or[propagation.TextMapPropagator](t.Propagator, propagation.TraceContext{}),
		Faults:          s.Faults,
		Logger:          logger,
	})
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	w := &Webhooks{service: service, awaitBound: settings.AwaitBound, conversions: conversionPaths(routes)}
	s.Share(w)
	return w, nil
}

// routesOf returns the webhook server's Route of each of hooks, and every
// mistake in hooks: domain/webhookconfig's, and a Conversion hub's.
func routesOf(hooks []Hook) ([]webhook.Route, []error) {
	_, errs := webhookconfig.Mistakes(configs(hooks))
	routes := make([]webhook.Route, 0, len(hooks))
	for i, h := range hooks {
		r := webhook.Route{Path: h.Path(), Name: h.cfg.WebhookName(), Admitter: h.admitter}
		switch h.cfg.Type {
		case webhookconfig.Validate:
			r.Type = webhook.Validating
		case webhookconfig.Mutate:
			r.Type = webhook.Mutating
		case webhookconfig.Conversion:
			r.Type, r.Admitter = webhook.Conversion, nil
			c, err := h.convert()
			if err != nil {
				errs = append(errs, fmt.Errorf("kube: Hook %d, %v: %w", i, h, err))
			}
			r.Converter = c
		}
		routes = append(routes, r)
	}
	return routes, errs
}

// loggerOf returns the Logger of kube's scope from s's LoggerProvider, or
// a no-op one when s has none.
func loggerOf(s *app.Setup) log.Logger {
	return cmp.Or[log.LoggerProvider](s.Telemetry.LoggerProvider, lognoop.NewLoggerProvider()).Logger(ports.ScopeName)
}

// Serve listens on the Settings' Address and answers the API server's
// reviews until ctx ends or Shutdown is called, then returns nil. It
// re-reads the certificate's files meanwhile. It fails when it cannot
// listen, and when it is called a second time.
func (w *Webhooks) Serve(ctx context.Context) error { return w.service.Serve(ctx) }

// Shutdown stops the Webhooks: Serve returns nil once the reviews in
// flight are answered. It returns an error wrapping ctx's when ctx ends
// first.
func (w *Webhooks) Shutdown(ctx context.Context) error { return w.service.Shutdown(ctx) }

// Ready is closed once the Webhooks listen, so the API server's calls
// reach them.
func (w *Webhooks) Ready() <-chan struct{} { return w.service.Ready() }

// Addr returns where the Webhooks listen, once Ready is closed, such as
// the port a test's Address of port 0 picked; nil before.
func (w *Webhooks) Addr() net.Addr { return w.service.Addr() }

// Healthy reports, as app/health's Monitor, whether the Webhooks serve:
// true from when they listen until Serve returns. It never fails.
func (w *Webhooks) Healthy(ctx context.Context) (bool, error) { return w.service.Healthy(ctx) }

// String names the Webhooks, as the App's records about them do.
func (w *Webhooks) String() string {
	if w.service == nil {
		// A Webhooks NewWebhooks didn't make still names itself in
		// errors, such as a Part's.
		return "kube webhooks ()"
	}
	return w.service.String()
}

// AwaitWebhooksBound is WebhookSettings.AwaitBound's default: 30
// seconds, long enough for a certificate mounted at the pod's start to be
// read, the port opened and the Service's endpoints to follow, and short
// enough that a Webhooks the API server never reaches shows as the
// Controller's own failure soon after.
const AwaitWebhooksBound = 30 * time.Second

// conversionPaths returns the paths of routes' conversions.
func conversionPaths(routes []webhook.Route) []string {
	var paths []string
	for _, r := range routes {
		if r.Type == webhook.Conversion {
			paths = append(paths, r.Path)
		}
	}
	return paths
}

// gatesOf returns the Gates of the Controller named controllerName that
// awaits, its AwaitWebhooks' Webhooks, logging through s's LoggerProvider.
func gatesOf(s *app.Setup, controllerName string, awaits []*Webhooks) []controller.Gate {
	if len(awaits) == 0 {
		return nil
	}
	logger := loggerOf(s)
	gates := make([]controller.Gate, len(awaits))
	for i, w := range awaits {
		gates[i] = w.gate(logger, controllerName)
	}
	return gates
}

// findGatesOf returns what the Controller named controllerName calls when
// it starts for the Gates of the Webhooks shared on s but those of
// awaits, which gatesOf made already: those NewWebhooks made on s so far,
// before or after the Controller.
func findGatesOf(s *app.Setup, controllerName string, awaits []*Webhooks) func() []controller.Gate {
	return func() []controller.Gate {
		var found []*Webhooks
		for _, v := range s.Shared() {
			if w, ok := v.(*Webhooks); ok && !slices.Contains(awaits, w) && !slices.Contains(found, w) {
				found = append(found, w)
			}
		}
		return gatesOf(s, controllerName, found)
	}
}

// gate returns the Gate that holds the Controller named controllerName
// until w listens, and retries its first check while the API server
// fails to reach w's conversion, for at most w's AwaitBound, with a
// record through logger of the wait and of each retry.
func (w *Webhooks) gate(logger log.Logger, controllerName string) controller.Gate {
	g := w.service.Gate(logger, controllerName, w.awaitBound)
	if len(w.conversions) > 0 {
		conversions := w.conversions
		g.Retries = func(err error) bool { return webhookreach.NamesConversion(err, conversions) }
		g.Retrying = w.service.Retrying(logger, controllerName)
	}
	return g
}
