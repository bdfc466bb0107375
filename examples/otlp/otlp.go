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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/loam-dev/loam/app"
)

// The settings the SDK and the exporters would otherwise take from the
// real environment, each the default the specification gives it.
const (
	retryInitialInterval = 5 * time.Second
	retryMaxInterval     = 30 * time.Second
	retryMaxElapsed      = time.Minute
	batchQueueSize       = 2048
	batchExportSize      = 512
	spanBatchTimeout     = 5 * time.Second
	logExportInterval    = time.Second
	batchExportTimeout   = 30 * time.Second
	attributeCountLimit  = 128
	cardinalityLimit     = 2000
)

// Options are what New adds to the providers besides the OTLP exporters,
// so an App's own exporters, such as Prometheus' reader or a processor
// that writes log records to stderr, share one provider with them.
type Options struct {
	// ServiceName is the resource's service.name unless OTEL_SERVICE_NAME,
	// or service.name in OTEL_RESOURCE_ATTRIBUTES, names another.
	// "unknown_service" when "".
	ServiceName string
	// SpanProcessors, MetricReaders and LogProcessors join the tracer,
	// meter and logger providers. The providers own them: their Shutdown
	// is the returned func's.
	SpanProcessors []sdktrace.SpanProcessor
	MetricReaders  []sdkmetric.Reader
	LogProcessors  []sdklog.Processor
}

// Builder returns an app.HostTelemetryBuilder that reads the Settings
// from the Process's environment and builds the App's Telemetry with New,
// on the App's Host. A bad or unsupported OTEL_* variable fails the App
// with exit code 78, naming every one.
func Builder(o Options) app.HostTelemetryBuilder {
	return func(ctx context.Context, h app.Host, p app.Process) (app.Telemetry, func(context.Context) error, error) {
		s, err := Read(ctx, p.Environment)
		if err != nil {
			return app.Telemetry{}, nil, err
		}
		return New(ctx, h, s, o)
	}
}

// New returns Telemetry whose providers export each signal by OTLP over
// HTTP to the endpoint s gives it, dialling through h's Network, and hold
// o's processors and readers too. A signal with no endpoint, and every
// signal when s.Disabled, is not exported: with none of o's for it
// either, its provider is left nil, for app to fill with a no-op. Every
// setting of the SDK and the exporters is passed explicitly, so none of
// the OTEL_* variables they read from the real environment changes what
// is exported, or where. The returned func flushes and shuts every
// provider down; an error, from an exporter that can't be built, names the
// signal.
func New(ctx context.Context, h app.Host, s Settings, o Options) (app.Telemetry, func(context.Context) error, error) {
	if s.Disabled {
		s.Traces, s.Metrics, s.Logs = Signal{}, Signal{}, Signal{}
	}
	exporting := s.Traces.Endpoint != "" || s.Metrics.Endpoint != "" || s.Logs.Endpoint != ""
	if exporting && h.Network == nil {
		return app.Telemetry{}, nil, errors.New("otlp: the Host has no Network to dial the collector through: build the telemetry with app.WithHostTelemetry")
	}
	res := s.Resource(o.ServiceName)
	transport := &http.Transport{
		// The Host's network, never the real one; no proxy, since
		// net/http's default would read HTTPS_PROXY from the real
		// environment.
		DialContext:           dial(h),
		Proxy:                 nil,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
	}
	client := &http.Client{Transport: transport}

	var (
		t         app.Telemetry
		shutdowns []func(context.Context) error
	)
	shutdown := func(ctx context.Context) error {
		var errs []error
		for _, f := range shutdowns {
			errs = append(errs, f(ctx))
		}
		transport.CloseIdleConnections()
		return errors.Join(errs...)
	}
	fail := func(signal string, err error) (app.Telemetry, func(context.Context) error, error) {
		_ = shutdown(ctx)
		return app.Telemetry{}, nil, fmt.Errorf("otlp: the %s exporter: %w", signal, err)
	}

	tracerOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(newSampler(s.Sampler, s.SamplerArg)),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   -1,
			AttributeCountLimit:         attributeCountLimit,
			EventCountLimit:             attributeCountLimit,
			LinkCountLimit:              attributeCountLimit,
			AttributePerEventCountLimit: attributeCountLimit,
			AttributePerLinkCountLimit:  attributeCountLimit,
		}),
	}
	for _, p := range o.SpanProcessors {
		tracerOpts = append(tracerOpts, sdktrace.WithSpanProcessor(p))
	}
	if s.Traces.Endpoint != "" {
		exp, err := otlptracehttp.New(ctx, traceOptions(s.Traces, client)...)
		if err != nil {
			return fail("traces", err)
		}
		tracerOpts = append(tracerOpts, sdktrace.WithBatcher(stampedSpans{SpanExporter: exp, res: res},
			sdktrace.WithBatchTimeout(spanBatchTimeout),
			sdktrace.WithExportTimeout(batchExportTimeout),
			sdktrace.WithMaxQueueSize(batchQueueSize),
			sdktrace.WithMaxExportBatchSize(batchExportSize),
		))
	}
	if len(o.SpanProcessors) > 0 || s.Traces.Endpoint != "" {
		tp := sdktrace.NewTracerProvider(tracerOpts...)
		t.TracerProvider = tp
		shutdowns = append(shutdowns, tp.Shutdown)
	}

	meterOpts := []sdkmetric.Option{
		sdkmetric.WithResource(res),
		sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter),
		sdkmetric.WithCardinalityLimit(cardinalityLimit),
	}
	for _, r := range o.MetricReaders {
		meterOpts = append(meterOpts, sdkmetric.WithReader(r))
	}
	if s.Metrics.Endpoint != "" {
		exp, err := otlpmetrichttp.New(ctx, metricOptions(s.Metrics, client)...)
		if err != nil {
			return fail("metrics", err)
		}
		meterOpts = append(meterOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(stampedMetrics{Exporter: exp, res: res},
			sdkmetric.WithInterval(s.MetricExportInterval),
			sdkmetric.WithTimeout(s.MetricExportTimeout),
		)))
	}
	if len(o.MetricReaders) > 0 || s.Metrics.Endpoint != "" {
		mp := sdkmetric.NewMeterProvider(meterOpts...)
		t.MeterProvider = mp
		shutdowns = append(shutdowns, mp.Shutdown)
	}

	loggerOpts := []sdklog.LoggerProviderOption{
		sdklog.WithResource(res),
		sdklog.WithAttributeCountLimit(attributeCountLimit),
		sdklog.WithAttributeValueLengthLimit(-1),
	}
	for _, p := range o.LogProcessors {
		loggerOpts = append(loggerOpts, sdklog.WithProcessor(p))
	}
	if s.Logs.Endpoint != "" {
		// Our own exporter, not otlploghttp's: it alone can send the
		// Settings' resource in place of the one the SDK merged with the
		// real environment (logexport.go).
		exp := newLogExporter(s.Logs, client, res)
		loggerOpts = append(loggerOpts, sdklog.WithProcessor(sdklog.NewBatchProcessor(exp,
			sdklog.WithExportInterval(logExportInterval),
			sdklog.WithExportTimeout(batchExportTimeout),
			sdklog.WithMaxQueueSize(batchQueueSize),
			sdklog.WithExportMaxBatchSize(batchExportSize),
		)))
	}
	if len(o.LogProcessors) > 0 || s.Logs.Endpoint != "" {
		lp := sdklog.NewLoggerProvider(loggerOpts...)
		t.LoggerProvider = lp
		shutdowns = append(shutdowns, lp.Shutdown)
	}
	return t, shutdown, nil
}

// dial returns h's dialer, or nil when h has no Network, which New
// refuses when anything is exported.
func dial(h app.Host) func(ctx context.Context, network, address string) (net.Conn, error) {
	if h.Network == nil {
		return nil
	}
	return h.Dial
}

// Resource returns the resource New exports every signal with: the
// Settings' attributes and service.name, as Service orders them with
// fallback, and no detector's, which would read the real environment.
// An httpmetrics Exporter made with httpmetrics.WithResource of it serves
// the same resource as /metrics' target_info.
func (s Settings) Resource(fallback string) *resource.Resource {
	attrs := make([]attribute.KeyValue, 0, len(s.ResourceAttributes)+1)
	for _, kv := range s.ResourceAttributes {
		if kv.Key != "service.name" {
			attrs = append(attrs, kv)
		}
	}
	return resource.NewSchemaless(append(attrs, attribute.String("service.name", s.Service(fallback)))...)
}

// Service returns the service.name the resource has: OTEL_SERVICE_NAME's,
// else service.name in OTEL_RESOURCE_ATTRIBUTES, else fallback, else
// "unknown_service", as the specification orders them.
func (s Settings) Service(fallback string) string {
	name := fallback
	for _, kv := range s.ResourceAttributes {
		if kv.Key == "service.name" {
			name = kv.Value.AsString()
		}
	}
	if s.ServiceName != "" {
		name = s.ServiceName
	}
	if name == "" {
		name = "unknown_service"
	}
	return name
}

// newSampler returns the sampler OTEL_TRACES_SAMPLER names; Read has
// checked the name.
func newSampler(name string, ratio float64) sdktrace.Sampler {
	switch name {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio)
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	default:
		return sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
}

// tlsFor is the exporter's TLS setting for endpoint: nil for http, which
// the exporters require with an insecure endpoint, so that a certificate
// named in the real environment never applies.
func tlsFor(endpoint string) *tls.Config {
	if u, err := url.Parse(endpoint); err == nil && u.Scheme == "https" {
		return &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return nil
}

func traceOptions(s Signal, client *http.Client) []otlptracehttp.Option {
	compression := otlptracehttp.NoCompression
	if s.Gzip {
		compression = otlptracehttp.GzipCompression
	}
	return []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(s.Endpoint),
		otlptracehttp.WithHeaders(s.Headers),
		otlptracehttp.WithTimeout(s.Timeout),
		otlptracehttp.WithCompression(compression),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled: true, InitialInterval: retryInitialInterval, MaxInterval: retryMaxInterval, MaxElapsedTime: retryMaxElapsed,
		}),
		otlptracehttp.WithTLSClientConfig(tlsFor(s.Endpoint)),
		otlptracehttp.WithHTTPClient(client),
	}
}

func metricOptions(s Signal, client *http.Client) []otlpmetrichttp.Option {
	compression := otlpmetrichttp.NoCompression
	if s.Gzip {
		compression = otlpmetrichttp.GzipCompression
	}
	return []otlpmetrichttp.Option{
		otlpmetrichttp.WithEndpointURL(s.Endpoint),
		otlpmetrichttp.WithHeaders(s.Headers),
		otlpmetrichttp.WithTimeout(s.Timeout),
		otlpmetrichttp.WithCompression(compression),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{
			Enabled: true, InitialInterval: retryInitialInterval, MaxInterval: retryMaxInterval, MaxElapsedTime: retryMaxElapsed,
		}),
		otlpmetrichttp.WithTLSClientConfig(tlsFor(s.Endpoint)),
		otlpmetrichttp.WithTemporalitySelector(sdkmetric.DefaultTemporalitySelector),
		otlpmetrichttp.WithAggregationSelector(sdkmetric.DefaultAggregationSelector),
		otlpmetrichttp.WithHTTPClient(client),
	}
}

// stampedSpans exports spans with the Settings' resource in place of the
// provider's, which the SDK merges with OTEL_RESOURCE_ATTRIBUTES from the
// real environment whatever resource it is given.
type stampedSpans struct {
	sdktrace.SpanExporter
	res *resource.Resource
}

// ExportSpans exports spans, each with the resource replaced.
func (e stampedSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	stamped := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		stamped[i] = stampedSpan{ReadOnlySpan: s, res: e.res}
	}
	return e.SpanExporter.ExportSpans(ctx, stamped)
}

// stampedSpan is a span with another resource.
type stampedSpan struct {
	sdktrace.ReadOnlySpan
	res *resource.Resource
}

// Resource returns the Settings' resource.
func (s stampedSpan) Resource() *resource.Resource { return s.res }

// stampedMetrics exports metrics with the Settings' resource, for the
// reason stampedSpans does.
type stampedMetrics struct {
	sdkmetric.Exporter
	res *resource.Resource
}

// Export exports rm with its resource replaced.
func (e stampedMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	stamped := *rm
	stamped.Resource = e.res
	return e.Exporter.Export(ctx, &stamped)
}
