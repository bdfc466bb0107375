package otlp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
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
		s, err := Read(ctx, p.Environment, h.FS)
		if err != nil {
			return app.Telemetry{}, nil, err
		}
		return New(ctx, h, s, o)
	}
}

// New returns Telemetry whose providers export each signal by OTLP, over
// HTTP or gRPC as its Protocol says, to the endpoint s gives it, dialling
// through h's Network, and hold o's processors and readers too. A signal
// with no endpoint, and every signal when s.Disabled, is not exported:
// with none of o's for it either, its provider is left nil, for app to
// fill with a no-op. The Propagator is OTEL_PROPAGATORS', nil for the
// App's default when it isn't set. Every setting of the SDK and the
// exporters is passed explicitly, so none of the OTEL_* variables they
// read from the real environment changes what is exported, or where.
// Every export, its retries included, is bounded by its signal's Timeout.
// The returned func flushes and shuts every provider down, then closes
// the connections; an error, from an exporter that can't be built, names
// the signal.
func New(ctx context.Context, h app.Host, s Settings, o Options) (app.Telemetry, func(context.Context) error, error) {
	if s.Disabled {
		s.Traces, s.Metrics, s.Logs = Signal{}, Signal{}, Signal{}
	}
	exporting := s.Traces.Endpoint != "" || s.Metrics.Endpoint != "" || s.Logs.Endpoint != ""
	if exporting && h.Network == nil {
		return app.Telemetry{}, nil, errNoNetwork
	}
	res := s.Resource(o.ServiceName)
	c := &conns{h: h}

	t := app.Telemetry{Propagator: s.Propagator()}
	var shutdowns []func(context.Context) error
	shutdown := func(ctx context.Context) error {
		var errs []error
		for _, f := range shutdowns {
			errs = append(errs, f(ctx))
		}
		return errors.Join(append(errs, c.close())...)
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
		exp, err := traceExporter(ctx, c, s.Traces)
		if err != nil {
			return fail("traces", err)
		}
		tracerOpts = append(tracerOpts, sdktrace.WithBatcher(stampedSpans{SpanExporter: exp, res: res, timeout: s.Traces.Timeout},
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
		exp, err := metricExporter(ctx, c, s.Metrics)
		if err != nil {
			return fail("metrics", err)
		}
		meterOpts = append(meterOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(stampedMetrics{Exporter: exp, res: res, timeout: s.Metrics.Timeout},
			sdkmetric.WithInterval(s.MetricExportInterval),
			sdkmetric.WithTimeout(metricExportTimeout(s.MetricExportTimeout)),
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
		// Our own exporter, not otlploghttp's or otlploggrpc's: it alone
		// can send the Settings' resource in place of the one the SDK
		// merged with the real environment (logexport.go).
		exp, err := logExporterFor(c, s.Logs, res)
		if err != nil {
			return fail("logs", err)
		}
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

// stampedSpans exports spans with the Settings' resource in place of the
// provider's, which the SDK merges with OTEL_RESOURCE_ATTRIBUTES from the
// real environment whatever resource it is given.
type stampedSpans struct {
	sdktrace.SpanExporter
	res *resource.Resource
	// timeout bounds each export, its retries included: otlptracehttp
	// bounds only each attempt, and that only with the client it makes
	// itself, not one passed with WithHTTPClient.
	timeout time.Duration
}

// ExportSpans exports spans, each with the resource replaced, within the
// timeout.
func (e stampedSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	ctx, cancel := withTimeout(ctx, e.timeout)
	defer cancel()
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
	// timeout bounds each export, for the reason stampedSpans' does.
	timeout time.Duration
}

// Export exports rm with its resource replaced, within the timeout.
func (e stampedMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	ctx, cancel := withTimeout(ctx, e.timeout)
	defer cancel()
	stamped := *rm
	stamped.Resource = e.res
	return e.Exporter.Export(ctx, &stamped)
}

// noLimit is the timeout New gives for a timeout of 0 where the SDK
// would read 0 as its default: 2³¹−1 milliseconds, the "very long time"
// the specification suggests.
const noLimit = (1<<31 - 1) * time.Millisecond

// metricExportTimeout returns the periodic reader's timeout for
// MetricExportTimeout d: noLimit for 0, which the SDK would read as 30s.
func metricExportTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return noLimit
	}
	return d
}

// withTimeout returns ctx bounded by timeout, or ctx alone when timeout
// isn't positive.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}
