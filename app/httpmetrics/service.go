// Package httpmetrics serves an App's metrics to Prometheus: GET /metrics
// answers in Prometheus' text format with what the Setup's MeterProvider
// measured, through OpenTelemetry's Prometheus exporter, and with the Go
// runtime's and the process's own metrics. With Settings.Pprof, it serves
// net/http/pprof's profiles under /debug/pprof/ too.
//
// With Settings.TLS it serves HTTPS, with a certificate re-read from its
// files as it rotates (app/tlsfiles); with WithFilter, every request
// passes a Filter first, such as the one kube.MetricsAuth makes, which
// lets through only the scrapers the API server authenticates and
// authorizes, as kubebuilder's operators protect their metrics.
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
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync"
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
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/httpserve"
	"github.com/loam-dev/loam/app/tlsfiles"
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

// targetInfoHelp is the HELP text of target_info, the one OpenTelemetry's
// Prometheus exporter gives its own (an unexported constant there).
const targetInfoHelp = "Target metadata"

// ExporterOption configures an Exporter that NewExporter makes.
type ExporterOption func(*exporterConfig)

// exporterConfig is what the ExporterOptions set.
type exporterConfig struct {
	resource     *resource.Resource
	withResource bool
}

// WithResource makes the Exporter serve target_info with exactly res's
// attributes as its labels, translated as the exporter translates them,
// such as k8s_pod_name for k8s.pod.name. It exists because an SDK
// MeterProvider merges resource.Environment(), the real
// OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME, into the resource it is
// given, and the exporter's own target_info is that merged resource:
// with WithResource, what reaches /metrics is the resource made from the
// Process's environment, as every other signal's is. NewExporter reports
// a nil res as an error.
func WithResource(res *resource.Resource) ExporterOption {
	return func(c *exporterConfig) {
		c.resource = res
		c.withResource = true
	}
}

// NewExporter returns an Exporter on a registry of its own, which holds the
// Go runtime's and the process's collectors besides the MeterProvider's
// metrics. Names are Prometheus' classic ones, with underscores and unit
// and _total suffixes, such as
// loam_kube_controller_reconcile_duration_seconds.
//
// Without WithResource, target_info carries the resource of the
// MeterProvider that reads the Exporter, which the SDK has merged with the
// real environment's OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME; with
// it, target_info carries the option's resource and nothing else.
//
// It reports every mistake at once, in one error: a collector that cannot
// be registered, a nil WithResource resource, and a resource attribute
// that cannot be a label.
func NewExporter(opts ...ExporterOption) (*Exporter, error) {
	var cfg exporterConfig
	for _, opt := range opts {
		opt(&cfg)
	}
	registry := prometheus.NewRegistry()
	var errs []error
	collectorsToRegister := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
	exporterOpts := []otelprometheus.Option{
		otelprometheus.WithRegisterer(registry),
		otelprometheus.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	}
	if cfg.withResource {
		exporterOpts = append(exporterOpts, otelprometheus.WithoutTargetInfo())
		if cfg.resource == nil {
			errs = append(errs, errors.New("WithResource: nil resource"))
		} else if info, err := newTargetInfo(cfg.resource); err != nil {
			errs = append(errs, fmt.Errorf("WithResource: %w", err))
		} else {
			collectorsToRegister = append(collectorsToRegister, info)
		}
	}
	for _, c := range collectorsToRegister {
		if err := registry.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	exp, err := otelprometheus.New(exporterOpts...)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		for i, err := range errs {
			errs[i] = fmt.Errorf("httpmetrics: the exporter: %w", err)
		}
		return nil, errors.Join(errs...)
	}
	return &Exporter{Exporter: exp, registry: registry}, nil
}

// targetInfo is a prometheus.Collector of one constant target_info series.
type targetInfo struct {
	metric prometheus.Metric
}

// newTargetInfo returns the target_info of res: a gauge of value 1 whose
// labels are res's attributes, each name translated as OpenTelemetry's
// exporter translates resource attribute names, and the values of
// attributes whose names translate alike joined by ";" in order, as the
// exporter joins them. It returns an error naming the attribute whose
// name cannot be a label.
func newTargetInfo(res *resource.Resource) (*targetInfo, error) {
	// The exporter's own namer for the strategy NewExporter gives it.
	namer := otlptranslator.LabelNamer{UTF8Allowed: !otlptranslator.UnderscoreEscapingWithSuffixes.ShouldEscape()}
	values := map[string][]string{}
	var errs []error
	for _, kv := range res.Attributes() {
		name, err := namer.Build(string(kv.Key))
		if err != nil {
			errs = append(errs, fmt.Errorf("resource attribute %q: %w", kv.Key, err))
			continue
		}
		values[name] = append(values[name], kv.Value.String())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(values))
	labels := make([]string, 0, len(names))
	for _, name := range names {
		vals := values[name]
		slices.Sort(vals)
		labels = append(labels, strings.Join(vals, ";"))
	}
	desc := prometheus.NewDesc(otlptranslator.TargetInfoMetricName, targetInfoHelp, names, nil)
	m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, 1, labels...)
	if err != nil {
		return nil, fmt.Errorf("target_info: %w", err)
	}
	return &targetInfo{metric: m}, nil
}

// Describe sends target_info's description.
func (t *targetInfo) Describe(ch chan<- *prometheus.Desc) { ch <- t.metric.Desc() }

// Collect sends the target_info series.
func (t *targetInfo) Collect(ch chan<- prometheus.Metric) { ch <- t.metric }

// Gatherer returns the Exporter's registry, which /metrics serves.
func (e *Exporter) Gatherer() prometheus.Gatherer { return e.registry }

// Service is an app.Service that serves an Exporter's metrics on /metrics.
// NewService makes one.
type Service struct {
	server *httpserve.Server
	// certificate is Settings.TLS's, whose reloads Serve runs; nil for
	// plain HTTP.
	certificate *tlsfiles.Certificate
}

// Filter wraps the Service's handler: it answers a request itself, such
// as with 401 Unauthorized or 403 Forbidden, or passes it on to next.
// kube.MetricsAuth makes the one that asks the API server.
type Filter func(next http.Handler) http.Handler

// ServiceOption configures a Service that NewService makes.
type ServiceOption func(*serviceConfig)

// serviceConfig is what the ServiceOptions set.
type serviceConfig struct {
	filters []Filter
}

// WithFilter makes every request, to /metrics and to pprof's profiles
// alike, pass filter first. Given more than once, the first given sees a
// request first. NewService reports a nil filter, and a filter on a
// Service without Settings.TLS, as mistakes.
func WithFilter(filter Filter) ServiceOption {
	return func(c *serviceConfig) { c.filters = append(c.filters, filter) }
}

// NewService returns a Service that serves exporter's metrics on
// settings.Address, through s.Host when it is served, over HTTPS when
// settings.TLS is set. It opens nothing itself: Serve listens. It reads
// the TLS certificate's files through s.Host, so a missing or malformed
// file fails the App's Init. It logs through s.Telemetry's LoggerProvider.
//
// It reports every mistake at once, in one error: a nil Setup, a Host
// without a Network, each mistake in settings, every mistake in
// settings.TLS and every file that doesn't read or parse, a nil exporter,
// a Setup whose MeterProvider is not the SDK's (such as the no-op one an
// App has when its TelemetryBuilder sets none), an exporter that no
// MeterProvider reads, because the TelemetryBuilder never passed it to
// sdkmetric.WithReader, a nil Filter, and a Filter without TLS.
func NewService(s *app.Setup, settings Settings, exporter *Exporter, opts ...ServiceOption) (*Service, error) {
	var cfg serviceConfig
	for _, opt := range opts {
		opt(&cfg)
	}
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
	for i, f := range cfg.filters {
		if f == nil {
			errs = append(errs, fmt.Errorf("WithFilter %d: nil Filter", i))
		}
	}
	if len(cfg.filters) > 0 && settings.TLS == nil {
		errs = append(errs, errors.New("WithFilter without Settings.TLS: a scraper's bearer token would cross the network in the clear; set Settings.TLS"))
	}
	var lp log.LoggerProvider = lognoop.NewLoggerProvider()
	if s != nil && s.Telemetry.LoggerProvider != nil {
		lp = s.Telemetry.LoggerProvider
	}
	logger := lp.Logger(scope)
	var cert *tlsfiles.Certificate
	if settings.TLS != nil && s != nil {
		var err error
		if cert, err = tlsfiles.New(context.Background(), s.Host, *settings.TLS, logger); err != nil {
			errs = append(errs, fmt.Errorf("Settings.TLS: %w", err))
		}
	}
	if len(errs) > 0 {
		for i, err := range errs {
			errs[i] = fmt.Errorf("httpmetrics: %w", err)
		}
		return nil, errors.Join(errs...)
	}

	mux := http.NewServeMux()
	var handler http.Handler = mux
	for _, f := range slices.Backward(cfg.filters) {
		handler = f(handler)
	}
	var tlsConfig *tls.Config
	if cert != nil {
		tlsConfig = cert.TLSConfig()
		// HTTP/1.1 only, as controller-runtime's metrics server does
		// since HTTP/2's rapid reset: a scrape needs nothing more.
		tlsConfig.NextProtos = []string{"http/1.1"}
	}
	server := httpserve.New(httpserve.Config{
		Package:           "httpmetrics",
		What:              "metrics",
		Network:           s.Host.Network,
		Address:           settings.Address,
		Handler:           handler,
		Logger:            logger,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		TLS:               tlsConfig,
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
	return &Service{server: server, certificate: cert}, nil
}

// Serve listens on the Settings' Address through the Setup's Host and
// answers scrapes until ctx ends or Shutdown is called, then returns nil.
// With Settings.TLS, it re-reads the certificate's files meanwhile, and
// stops doing so before it returns. It returns an error when it cannot
// listen, when accepting fails, or when it is called a second time.
func (s *Service) Serve(ctx context.Context) error {
	if s.certificate == nil {
		return s.server.Serve(ctx)
	}
	reloadCtx, stopReloads := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.certificate.Run(reloadCtx) }) // Run logs its failures and never fails.
	defer wg.Wait()
	defer stopReloads()
	return s.server.Serve(ctx)
}

// Shutdown stops the Service: it stops accepting scrapes, so Serve returns
// nil, and waits for those in flight to be answered. When ctx ends first,
// it closes their connections and returns an error wrapping ctx's.
func (s *Service) Shutdown(ctx context.Context) error { return s.server.Shutdown(ctx) }

// Ready returns a channel closed once Serve listens. It stays open when
// Serve never listens.
func (s *Service) Ready() <-chan struct{} { return s.server.Ready() }

// Addr returns the address Serve listens on, which tells a Settings'
// Address of port 0 its port, or nil before Serve listens.
func (s *Service) Addr() net.Addr { return s.server.Addr() }
