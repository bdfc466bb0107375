// Package httpmetrics serves an App's metrics to Prometheus: GET /metrics
// answers in Prometheus' text format with what the Setup's MeterProvider
// measured, through OpenTelemetry's Prometheus exporter, and with the Go
// runtime's and the process's own metrics. With Settings.Pprof, it serves
// net/http/pprof's profiles under /debug/pprof/ too.
//
// An SDK MeterProvider takes its readers when it is built, so the exporter
// comes first: the App's TelemetryBuilder calls NewExporter and builds its
// MeterProvider with sdkmetric.WithReader(exporter), and Init hands the
// same Exporter to NewService.
//
// Each Exporter gathers into a registry of its own, never
// prometheus.DefaultRegisterer, so two Apps in one process, such as tests,
// never share or collide.
package httpmetrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/internal/httpserve"
)

// scope is the instrumentation scope of the Service's log records.
const scope = "github.com/loam-dev/loam/app/httpmetrics"

// The server's timeouts. A scrape is one request every scrape interval,
// so these only bound clients that misbehave. There is no write timeout:
// a CPU profile answers after its seconds.
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Exporter is the metric reader of an App's MeterProvider that a Service
// serves: pass it to sdkmetric.WithReader in the TelemetryBuilder, and to
// NewService in Init. NewExporter makes one.
type Exporter struct {
	// Reader is OpenTelemetry's Prometheus exporter, a sdkmetric.Reader.
	*otelprometheus.Exporter
	registry *prometheus.Registry
}

// NewExporter returns an Exporter on a registry of its own, which holds the
// Go runtime's and the process's collectors besides the MeterProvider's
// metrics. Names are Prometheus' classic ones, with underscores and unit
// and _total suffixes, such as
// loam_kube_controller_reconcile_duration_seconds. It returns an error
// when a collector cannot be registered.
func NewExporter() (*Exporter, error) {
	registry := prometheus.NewRegistry()
	var errs []error
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := registry.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	exp, err := otelprometheus.New(
		otelprometheus.WithRegisterer(registry),
		otelprometheus.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("httpmetrics: the exporter: %w", err)
	}
	return &Exporter{Exporter: exp, registry: registry}, nil
}

// Gatherer returns the Exporter's registry, which /metrics serves.
func (e *Exporter) Gatherer() prometheus.Gatherer { return e.registry }

// Service is an app.Service that serves an Exporter's metrics on /metrics.
// NewService makes one.
type Service struct {
	server *httpserve.Server
}

// NewService returns a Service that serves exporter's metrics on
// settings.Address, through s.Host when it is served. It opens nothing
// itself: Serve listens. It logs through s.Telemetry's LoggerProvider.
//
// It reports every mistake at once, in one error: a nil Setup, a Host
// without a Network, each mistake in settings, a nil exporter, a Setup
// whose MeterProvider is not the SDK's (such as the no-op one an App has
// when its TelemetryBuilder sets none), and an exporter that no
// MeterProvider reads, because the TelemetryBuilder never passed it to
// sdkmetric.WithReader.
func NewService(s *app.Setup, settings Settings, exporter *Exporter) (*Service, error) {
	var errs []error
	if s == nil {
		errs = append(errs, errors.New("nil Setup"))
	} else {
		if s.Host.Network == nil {
			errs = append(errs, errors.New("the Setup's Host has no Network to listen on"))
		}
		if _, ok := s.Telemetry.MeterProvider.(*sdkmetric.MeterProvider); !ok {
			errs = append(errs, fmt.Errorf("the Setup's Telemetry.MeterProvider is %T, not an SDK *sdkmetric.MeterProvider an Exporter can read: build it in the TelemetryBuilder with sdkmetric.WithReader(exporter)", s.Telemetry.MeterProvider))
		}
	}
	errs = append(errs, settings.check()...)
	if exporter == nil || exporter.Exporter == nil {
		errs = append(errs, errors.New("nil Exporter: make it with NewExporter"))
	} else if err := exporter.Collect(context.Background(), &metricdata.ResourceMetrics{}); err != nil {
		// A reader no MeterProvider registered answers ErrReaderNotRegistered,
		// and /metrics would serve only the runtime's metrics, silently.
		errs = append(errs, fmt.Errorf("the Exporter is read by no MeterProvider: pass it to sdkmetric.WithReader in the TelemetryBuilder: %w", err))
	}
	if len(errs) > 0 {
		for i, err := range errs {
			errs[i] = fmt.Errorf("httpmetrics: %w", err)
		}
		return nil, errors.Join(errs...)
	}

	var lp log.LoggerProvider = lognoop.NewLoggerProvider()
	if s.Telemetry.LoggerProvider != nil {
		lp = s.Telemetry.LoggerProvider
	}
	mux := http.NewServeMux()
	server := httpserve.New(httpserve.Config{
		Package:           "httpmetrics",
		What:              "metrics",
		Network:           s.Host.Network,
		Address:           settings.Address,
		Handler:           mux,
		Logger:            lp.Logger(scope),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(exporter.registry, promhttp.HandlerOpts{
		ErrorLog: server.ErrorLog(),
	}))
	if settings.Pprof {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	svc := &Service{server: server}
	return svc, nil
}

// Serve listens on the Settings' Address through the Setup's Host and
// answers scrapes until ctx ends or Shutdown is called, then returns nil.
// It returns an error when it cannot listen, when accepting fails, or when
// it is called a second time.
func (s *Service) Serve(ctx context.Context) error { return s.server.Serve(ctx) }

// Shutdown stops the Service: it stops accepting scrapes, so Serve returns
// nil, and waits for those in flight to be answered. When ctx ends first,
// it closes their connections and returns an error wrapping ctx's.
func (s *Service) Shutdown(ctx context.Context) error { return s.server.Shutdown(ctx) }
