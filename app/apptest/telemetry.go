package apptest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loam-dev/loam/app"
)

// ErrNotRecorded is what Telemetry.Metric returns, wrapped, when no metric
// has the name asked for.
var ErrNotRecorded = errors.New("apptest: not recorded")

// Telemetry is an App's telemetry kept in memory for a test to read: the
// OpenTelemetry SDK's tracer, meter and logger providers, and W3C trace
// context and baggage as the propagator. Its embedded app.Telemetry is
// what a Setup holds.
//
// Spans and log records are kept as they end or are emitted, on the
// goroutine that ends or emits them, so a test reads them as soon as that
// call has returned; metrics are collected when the test asks. What was
// kept stays readable after Shutdown.
//
// The SDK reads a few OTEL_* variables of the real environment for its
// defaults. Telemetry sets the sampler (every span), the span and log
// limits and the exemplar filter itself, so none of them changes what a
// test sees.
type Telemetry struct {
	app.Telemetry

	tracers *sdktrace.TracerProvider
	meters  *sdkmetric.MeterProvider
	loggers *sdklog.LoggerProvider
	reader  *sdkmetric.ManualReader

	mu      sync.Mutex
	spans   []tracetest.SpanStub
	records []sdklog.Record
	// running are the spans started and not yet ended, in the order they
	// started.
	running []sdktrace.ReadOnlySpan
	// final is the last collection of metrics, taken by Shutdown.
	final *metricdata.ResourceMetrics
}

// NewTelemetry returns a Telemetry with nothing recorded. It starts no
// goroutine; Shutdown ends its providers, as an App does when it stops.
func NewTelemetry() *Telemetry {
	t := &Telemetry{reader: sdkmetric.NewManualReader()}
	res := resource.NewSchemaless(attribute.String("service.name", "apptest"))
	t.tracers = sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		// The SDK's defaults, whatever OTEL_SPAN_* say.
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   sdktrace.DefaultAttributeValueLengthLimit,
			AttributeValueDepthLimit:    sdktrace.DefaultAttributeValueDepthLimit,
			AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
			EventCountLimit:             sdktrace.DefaultEventCountLimit,
			LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
			AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
			AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
		}),
		sdktrace.WithSpanProcessor(spanKeeper{t}),
	)
	t.meters = sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(t.reader),
		sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter),
	)
	t.loggers = sdklog.NewLoggerProvider(
		sdklog.WithResource(res),
		sdklog.WithAttributeCountLimit(-1),
		sdklog.WithAttributeValueLengthLimit(-1),
		sdklog.WithProcessor(recordKeeper{t}),
	)
	t.Telemetry = app.Telemetry{
		TracerProvider: t.tracers,
		MeterProvider:  t.meters,
		LoggerProvider: t.loggers,
		Propagator:     propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	return t
}

// Builder returns an app.TelemetryBuilder that hands an App this
// Telemetry, and Shutdown as the function the App calls when it stops.
func (t *Telemetry) Builder() app.TelemetryBuilder {
	return func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
		return t.Telemetry, t.Shutdown, nil
	}
}

// Spans returns the spans that have ended, in the order they ended.
func (t *Telemetry) Spans() []tracetest.SpanStub {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]tracetest.SpanStub(nil), t.spans...)
}

// Running returns the spans that have started and not yet ended, in the
// order they started, each as it is when Running is called: a span's
// attributes and events so far, and no end time. A test reads from them
// what is under way, such as a reconcile that has not returned: one
// that writes nothing for a while, busy outside the cluster, is not
// done. A span that never ends stays running; after Shutdown, those
// still running stay so.
func (t *Telemetry) Running() []tracetest.SpanStub {
	t.mu.Lock()
	running := slices.Clone(t.running)
	t.mu.Unlock()
	out := make([]tracetest.SpanStub, len(running))
	for i, s := range running {
		out[i] = tracetest.SpanStubFromReadOnlySpan(s)
	}
	return out
}

// SpansNamed returns the spans named name that have ended, in the order
// they ended.
func (t *Telemetry) SpansNamed(name string) []tracetest.SpanStub {
	var named []tracetest.SpanStub
	for _, s := range t.Spans() {
		if s.Name == name {
			named = append(named, s)
		}
	}
	return named
}

// Records returns the log records emitted, in the order they were
// emitted.
func (t *Telemetry) Records() []sdklog.Record {
	t.mu.Lock()
	defer t.mu.Unlock()
	records := make([]sdklog.Record, len(t.records))
	for i := range t.records {
		records[i] = t.records[i].Clone()
	}
	return records
}

// FormatRecords returns the log records emitted, one a line, in the
// order they were emitted, as a person reads a log: the time, the
// severity, the body and each attribute as key=value, strings quoted when
// they hold a space, a quote or a control character. It returns "" when none was emitted.
func (t *Telemetry) FormatRecords() string {
	var b strings.Builder
	for _, r := range t.Records() {
		b.WriteString(r.Timestamp().UTC().Format("15:04:05.000"))
		b.WriteByte(' ')
		sev := r.SeverityText()
		if sev == "" {
			sev = r.Severity().String()
		}
		b.WriteString(sev)
		b.WriteByte(' ')
		b.WriteString(quoted(r.Body().String()))
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			b.WriteByte(' ')
			b.WriteString(string(kv.Key))
			b.WriteByte('=')
			b.WriteString(quoted(kv.Value.String()))
			return true
		})
		b.WriteByte('\n')
	}
	return b.String()
}

// quoted returns s as it is, or quoted when a reader couldn't tell where
// it ends, or it holds a character a terminal acts on, such as a carriage
// return or ESC, which would rewrite the test's output.
func quoted(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"=") || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// ExceptionMessages returns the exception.message attribute of each log
// record whose body is body, in the order they were emitted, with "" for
// a record that has none. loam's records of a failure carry the error
// there, so a test reads what went wrong as the operator's logs say it.
func (t *Telemetry) ExceptionMessages(body string) []string {
	var msgs []string
	for _, r := range t.Records() {
		if r.Body().AsString() != body {
			continue
		}
		msg := ""
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			if kv.Key == "exception.message" {
				msg = kv.Value.AsString()
				return false
			}
			return true
		})
		msgs = append(msgs, msg)
	}
	return msgs
}

// Metrics collects every metric recorded so far, cumulatively. After
// Shutdown it returns the collection Shutdown took. It fails only when
// ctx is done or collecting fails.
func (t *Telemetry) Metrics(ctx context.Context) (metricdata.ResourceMetrics, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.final != nil {
		return *t.final, nil
	}
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(ctx, &rm); err != nil {
		return metricdata.ResourceMetrics{}, fmt.Errorf("apptest: collecting metrics: %w", err)
	}
	return rm, nil
}

// Metric collects the metric named name, from whichever instrumentation
// scope recorded it first. When none has, it returns an error wrapping
// ErrNotRecorded that lists the names there are.
func (t *Telemetry) Metric(ctx context.Context, name string) (metricdata.Metrics, error) {
	rm, err := t.Metrics(ctx)
	if err != nil {
		return metricdata.Metrics{}, err
	}
	var names []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, nil
			}
			names = append(names, m.Name)
		}
	}
	return metricdata.Metrics{}, fmt.Errorf("metric %q: %w (recorded: [%s])", name, ErrNotRecorded, strings.Join(names, ", "))
}

// Total collects the int64 counter, up-down counter or gauge named name,
// and returns the sum of its data points, over every set of attributes.
// When nothing has recorded it, it returns an error wrapping
// ErrNotRecorded, as Metric does; it fails too when name holds another
// type of data.
func (t *Telemetry) Total(ctx context.Context, name string) (int64, error) {
	points, err := t.int64Points(ctx, name)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, dp := range points {
		n += dp.Value
	}
	return n, nil
}

// TotalBy is Total, summed by the value of the attribute key: the sum of
// the data points without it is under "". It fails as Total does.
func (t *Telemetry) TotalBy(ctx context.Context, name string, key attribute.Key) (map[string]int64, error) {
	points, err := t.int64Points(ctx, name)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, dp := range points {
		name := ""
		if v, ok := dp.Attributes.Value(key); ok {
			name = v.String()
		}
		out[name] += dp.Value
	}
	return out, nil
}

// int64Points collects the data points of the int64 sum or gauge named
// name.
func (t *Telemetry) int64Points(ctx context.Context, name string) ([]metricdata.DataPoint[int64], error) {
	m, err := t.Metric(ctx, name)
	if err != nil {
		return nil, err
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		return d.DataPoints, nil
	case metricdata.Gauge[int64]:
		return d.DataPoints, nil
	}
	return nil, fmt.Errorf("metric %q is a %T, not an int64 sum or gauge", name, m.Data)
}

// Shutdown takes a last collection of metrics, which Metrics returns from
// then on, and shuts the providers down: spans ended and records emitted
// afterwards are dropped, as an App's are once it has stopped. A second
// call does nothing. It fails with every provider's error.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	if t.final != nil {
		t.mu.Unlock()
		return nil
	}
	var rm metricdata.ResourceMetrics
	collectErr := t.reader.Collect(ctx, &rm)
	t.final = &rm
	t.mu.Unlock()

	errs := []error{collectErr}
	errs = append(errs, t.tracers.Shutdown(ctx), t.meters.Shutdown(ctx), t.loggers.Shutdown(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("apptest: shutting telemetry down: %w", err)
	}
	return nil
}

// spanKeeper keeps each span as it ends, and those running until they
// do.
type spanKeeper struct{ t *Telemetry }

func (k spanKeeper) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	k.t.mu.Lock()
	defer k.t.mu.Unlock()
	k.t.running = append(k.t.running, s)
}

func (k spanKeeper) OnEnd(s sdktrace.ReadOnlySpan) {
	stub := tracetest.SpanStubFromReadOnlySpan(s)
	id := s.SpanContext().SpanID()
	k.t.mu.Lock()
	defer k.t.mu.Unlock()
	k.t.spans = append(k.t.spans, stub)
	k.t.running = slices.DeleteFunc(k.t.running, func(r sdktrace.ReadOnlySpan) bool { return r.SpanContext().SpanID() == id })
}

func (spanKeeper) Shutdown(context.Context) error   { return nil }
func (spanKeeper) ForceFlush(context.Context) error { return nil }

// recordKeeper keeps a copy of each log record as it is emitted.
type recordKeeper struct{ t *Telemetry }

func (recordKeeper) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

func (k recordKeeper) OnEmit(_ context.Context, r *sdklog.Record) error {
	kept := r.Clone()
	k.t.mu.Lock()
	defer k.t.mu.Unlock()
	k.t.records = append(k.t.records, kept)
	return nil
}

func (recordKeeper) Shutdown(context.Context) error   { return nil }
func (recordKeeper) ForceFlush(context.Context) error { return nil }
