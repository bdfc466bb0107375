// Package httphealth serves an App's health Checks to the kubelet's HTTP
// probes: GET /readyz for the readiness probe and GET /livez for the
// liveness probe.
//
// Each answers 200 with the body "ok" when its checks are healthy, and 503
// otherwise, with one line in the body for each failing check, naming it
// and giving its Monitor's error, if any:
//
//	readiness check "synced": unhealthy
//	liveness check 2: unhealthy: database: connection refused
//
// /livez asks the liveness Checks. /readyz asks the readiness Checks and the
// liveness Checks too, as the API server's own /readyz does: a process that
// is not alive is not ready to take traffic either.
//
// A controller's pod has no server of its own, so its probes come from a
// Service that NewService makes, returned from Init beside the controller.
package httphealth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/app/httpserve"
)

// scope is the instrumentation scope of the Service's log records.
const scope = "github.com/loam-dev/loam/app/httphealth"

// The server's timeouts. A probe is one small request on a connection of
// its own, which the kubelet gives up on after its timeoutSeconds (1s by
// default), so these only bound clients that misbehave.
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 30 * time.Second
)

// The attributes of the Service's log records.
var (
	attrCheck      = attribute.Key("loam.health.check")
	attrKind       = attribute.Key("loam.health.kind")
	attrHealthy    = attribute.Key("loam.health.healthy")
	attrExcMessage = attribute.Key("exception.message")
)

// Service is an app.Service that serves health Checks to HTTP probes.
// NewService makes one.
type Service struct {
	server *httpserve.Server
	logger log.Logger

	// liveness and readiness are the Checks each path asks.
	liveness, readiness []*check
}

// check is one health.Check, with the label a probe's report names it by,
// and the last health it was seen in, to log when that changes.
type check struct {
	health.Check
	label string

	mu   sync.Mutex
	seen state
}

// state is what a check was last seen as.
type state uint8

const (
	unseen state = iota
	healthy
	unhealthy
)

// NewService returns a Service that serves checks on settings.Address,
// through s.Host when it is served. It opens nothing itself: Serve listens.
// It logs through s.Telemetry's LoggerProvider.
//
// It reports every mistake at once, in one error: a nil Setup, a Host
// without a Network, each mistake in settings, each mistake that
// health.Check.Validate finds in a check, and two checks of the same kind
// with the same Name. A Service with no checks of a kind answers that kind's
// probe with 200.
func NewService(s *app.Setup, settings Settings, checks ...health.Check) (*Service, error) {
	var errs []error
	if s == nil {
		errs = append(errs, errors.New("nil Setup"))
	} else if s.Host.Network == nil {
		errs = append(errs, errors.New("the Setup's Host has no Network to listen on"))
	}
	errs = append(errs, settings.check()...)
	errs = append(errs, checkChecks(checks)...)
	if len(errs) > 0 {
		for i, err := range errs {
			errs[i] = fmt.Errorf("httphealth: %w", err)
		}
		return nil, errors.Join(errs...)
	}

	var lp log.LoggerProvider = lognoop.NewLoggerProvider()
	if s.Telemetry.LoggerProvider != nil {
		lp = s.Telemetry.LoggerProvider
	}
	svc := &Service{logger: lp.Logger(scope)}
	svc.liveness, svc.readiness = labelled(checks)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", svc.probe(svc.liveness))
	mux.HandleFunc("GET /readyz", svc.probe(append(append([]*check(nil), svc.liveness...), svc.readiness...)))
	svc.server = httpserve.New(httpserve.Config{
		Package:           "httphealth",
		What:              "probes",
		Network:           s.Host.Network,
		Address:           settings.Address,
		Handler:           mux,
		Logger:            svc.logger,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
	})
	return svc, nil
}

// checkChecks reports the mistakes in checks, naming each by its index.
func checkChecks(checks []health.Check) []error {
	var errs []error
	named := make(map[health.Kind]map[string]int)
	for i, c := range checks {
		if err := c.Validate(); err != nil {
			for _, e := range split(err) {
				errs = append(errs, fmt.Errorf("checks[%d]: %w", i, e))
			}
		}
		if c.Name == "" {
			continue
		}
		if j, dup := named[c.Kind][c.Name]; dup {
			errs = append(errs, fmt.Errorf("checks[%d]: %v has the name of checks[%d]", i, c, j))
			continue
		}
		if named[c.Kind] == nil {
			named[c.Kind] = make(map[string]int)
		}
		named[c.Kind][c.Name] = i
	}
	return errs
}

// split returns the errors err joins, or err alone.
func split(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// labelled sorts checks by kind and labels each: a named check by its name,
// and an unnamed one by its kind, and its place among that kind's unnamed
// checks when there are several.
func labelled(checks []health.Check) (liveness, readiness []*check) {
	unnamed := make(map[health.Kind]int)
	for _, c := range checks {
		if c.Name == "" {
			unnamed[c.Kind]++
		}
	}
	place := make(map[health.Kind]int)
	for _, c := range checks {
		l := &check{Check: c, label: c.String()}
		if c.Name == "" && unnamed[c.Kind] > 1 {
			place[c.Kind]++
			l.label += " " + strconv.Itoa(place[c.Kind])
		}
		if c.Kind == health.KindLiveness {
			liveness = append(liveness, l)
		} else {
			readiness = append(readiness, l)
		}
	}
	return liveness, readiness
}

// probe returns the handler of a path that asks checks.
func (s *Service) probe(checks []*check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var failures []string
		for _, c := range checks {
			if report, ok := s.ask(r.Context(), c); !ok {
				failures = append(failures, report)
			}
		}
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		if len(failures) == 0 {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(strings.Join(failures, "\n") + "\n"))
	}
}

// ask asks c's Monitor, logs a change in its health, and returns whether
// it is healthy and, when it is not, the line that reports it.
func (s *Service) ask(ctx context.Context, c *check) (string, bool) {
	ok, err := c.Monitor.Healthy(ctx)
	if err != nil {
		ok = false
	}
	now := healthy
	if !ok {
		now = unhealthy
	}
	c.mu.Lock()
	changed := c.seen != now
	c.seen = now
	c.mu.Unlock()

	report := c.label + ": unhealthy"
	if err != nil {
		// One line per check: a joined error's lines are joined with "; ".
		report += ": " + strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	if changed {
		s.logChange(ctx, c, ok, report, err)
	}
	return report, ok
}

// logChange records that c was seen healthy or not, for the first time or
// unlike the last time it was asked: INFO when it is healthy, WARN when it
// is not, with the Monitor's error, if any.
func (s *Service) logChange(ctx context.Context, c *check, ok bool, report string, err error) {
	var r log.Record
	r.SetTimestamp(time.Now())
	sev, body := log.SeverityInfo, c.label+": healthy"
	if !ok {
		sev, body = log.SeverityWarn, report
	}
	r.SetSeverity(sev)
	r.SetSeverityText(sev.String())
	r.SetBody(attribute.StringValue(body))
	r.AddAttributes(
		attrCheck.String(c.label),
		attrKind.String(c.Kind.String()),
		attrHealthy.Bool(ok),
	)
	if err != nil {
		r.SetErr(err)
		r.AddAttributes(attrExcMessage.String(err.Error()))
	}
	s.logger.Emit(ctx, r)
}

// Serve listens on the Settings' Address through the Setup's Host and
// answers probes until ctx ends or Shutdown is called, then returns nil.
// Connections in flight are left for Shutdown to finish. Serve returns an
// error when it cannot listen, when accepting fails, or when it is called
// a second time.
func (s *Service) Serve(ctx context.Context) error { return s.server.Serve(ctx) }

// Shutdown stops the Service: it stops accepting probes, so Serve returns
// nil, and waits for the probes in flight to be answered. When ctx ends
// first, it closes their connections and returns an error wrapping ctx's.
// A Service shut down before it is served never listens.
func (s *Service) Shutdown(ctx context.Context) error { return s.server.Shutdown(ctx) }
