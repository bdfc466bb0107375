package otlp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/loam-dev/loam/examples/otlp/otlptest"
)

// serve starts h on loopback, closed when the test ends, and returns its
// logs endpoint.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/logs"
}

// testExporter returns a logExporter for s with res, on a client of its
// own whose idle connections close when the test ends, retrying after
// 1ms.
func testExporter(t *testing.T, s Signal, res *resource.Resource) *logExporter {
	t.Helper()
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	e := newLogExporter(s, &http.Client{Transport: transport}, res)
	e.initialBackoff, e.maxBackoff = time.Millisecond, time.Millisecond
	return e
}

// emitThrough emits, through a provider whose resource isn't ours, one
// record of each of two scopes, and a second of the first's, and shuts
// the provider down.
func emitThrough(t *testing.T, e sdklog.Exporter) {
	t.Helper()
	lp := sdklog.NewLoggerProvider(
		sdklog.WithResource(resource.NewSchemaless(attribute.String("service.name", "the SDK's"), attribute.String("leak", "yes"))),
		sdklog.WithProcessor(sdklog.NewSimpleProcessor(e)),
		sdklog.WithAttributeCountLimit(3),
	)
	kube := lp.Logger("github.com/loam-dev/loam/kube",
		log.WithInstrumentationVersion("v1.2.3"),
		log.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"),
		log.WithInstrumentationAttributes(attribute.String("loam.component", "kube")))
	app := lp.Logger("github.com/loam-dev/loam/app")

	ctx := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	}))
	var r log.Record
	r.SetTimestamp(time.Unix(100, 5))
	r.SetObservedTimestamp(time.Unix(200, 7))
	r.SetSeverity(log.SeverityWarn2)
	r.SetSeverityText("WARN")
	r.SetEventName("loam.kube.reconcile")
	r.SetBody(attribute.MapValue(
		attribute.String("string", "s"),
		attribute.Bool("bool", true),
		attribute.Int64("int64", -3),
		attribute.Float64("float64", 1.5),
		attribute.ByteSlice("bytes", []byte{0, 1}),
		attribute.Slice("slice", attribute.StringValue("a"), attribute.Int64Value(2)),
		attribute.Map("map", attribute.String("k", "v")),
		attribute.StringSlice("strings", []string{"x", "y"}),
	))
	r.AddAttributes(attribute.String("a", "1"), attribute.Int64("b", 2), attribute.Bool("c", true), attribute.String("d", "dropped"))
	kube.Emit(ctx, r)

	var plain log.Record
	plain.SetBody(attribute.StringValue("second"))
	plain.SetSeverity(log.SeverityInfo)
	app.Emit(t.Context(), plain)

	var empty log.Record
	empty.SetSeverity(log.SeverityError)
	kube.Emit(t.Context(), empty)
	require.NoError(t, lp.Shutdown(t.Context()))
}

func TestLogExporterEncodesEveryField(t *testing.T) {
	receiver := otlptest.NewReceiver()
	endpoint := serve(t, receiver)
	res := resource.NewSchemaless(attribute.String("service.name", "memcached-operator"))
	emitThrough(t, testExporter(t, Signal{Endpoint: endpoint, Timeout: time.Second, Gzip: true, Headers: map[string]string{"Api-Key": "secret"}}, res))

	for _, r := range receiver.Requests() {
		require.Equal(t, "secret", r.Header.Get("Api-Key"))
		require.Equal(t, "gzip", r.Header.Get("Content-Encoding"))
		require.Equal(t, "application/x-protobuf", r.Header.Get("Content-Type"))
	}
	// The simple processor exports each record alone: gather them.
	var (
		resources []map[string]any
		scopes    []*commonpb.InstrumentationScope
		schemas   []string
		records   []*logspb.LogRecord
	)
	for _, req := range receiver.LogRequests() {
		require.Len(t, req.GetResourceLogs(), 1)
		rl := req.GetResourceLogs()[0]
		attrs := map[string]any{}
		for _, kv := range rl.GetResource().GetAttributes() {
			attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
		}
		resources = append(resources, attrs)
		for _, sl := range rl.GetScopeLogs() {
			scopes = append(scopes, sl.GetScope())
			schemas = append(schemas, sl.GetSchemaUrl())
			records = append(records, sl.GetLogRecords()...)
		}
	}
	require.Len(t, records, 3)
	for _, r := range resources {
		require.Equal(t, map[string]any{"service.name": "memcached-operator"}, r, "our resource, not the provider's")
	}
	require.True(t, proto.Equal(&commonpb.InstrumentationScope{
		Name:       "github.com/loam-dev/loam/kube",
		Version:    "v1.2.3",
		Attributes: []*commonpb.KeyValue{{Key: "loam.component", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "kube"}}}},
	}, scopes[0]), "scope %v", scopes[0])
	require.Equal(t, "https://opentelemetry.io/schemas/1.26.0", schemas[0])
	require.Equal(t, "github.com/loam-dev/loam/app", scopes[1].GetName())
	require.Empty(t, schemas[1])

	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	kvlist := func(kvs ...*commonpb.KeyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}}
	}
	want := &logspb.LogRecord{
		TimeUnixNano:         100_000_000_005,
		ObservedTimeUnixNano: 200_000_000_007,
		SeverityNumber:       logspb.SeverityNumber_SEVERITY_NUMBER_WARN2,
		SeverityText:         "WARN",
		EventName:            "loam.kube.reconcile",
		// attribute.MapValue sorts its keys.
		Body: kvlist(
			kv("bool", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}),
			kv("bytes", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1}}}),
			kv("float64", &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 1.5}}),
			kv("int64", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: -3}}),
			kv("map", kvlist(kv("k", str("v")))),
			kv("slice", arr(str("a"), &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 2}})),
			kv("string", str("s")),
			kv("strings", arr(str("x"), str("y"))),
		),
		Attributes: []*commonpb.KeyValue{
			kv("a", str("1")),
			kv("b", &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 2}}),
			kv("c", &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}),
		},
		DroppedAttributesCount: 1,
		Flags:                  uint32(trace.FlagsSampled),
		TraceId:                []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanId:                 []byte{1, 2, 3, 4, 5, 6, 7, 8},
	}
	require.True(t, proto.Equal(want, records[0]), "got %v", records[0])

	require.Equal(t, "second", records[1].GetBody().GetStringValue())
	require.Equal(t, logspb.SeverityNumber_SEVERITY_NUMBER_INFO, records[1].GetSeverityNumber())
	require.Empty(t, records[1].GetTraceId(), "outside a span")
	require.Empty(t, records[1].GetSpanId())
	require.Zero(t, records[1].GetTimeUnixNano(), "no timestamp set")
	require.NotZero(t, records[1].GetObservedTimeUnixNano(), "the SDK observes every record")

	require.NotNil(t, records[2].GetBody(), "an empty body is an AnyValue with no value")
	require.Nil(t, records[2].GetBody().GetValue())
	require.Equal(t, logspb.SeverityNumber_SEVERITY_NUMBER_ERROR, records[2].GetSeverityNumber())
}

func TestLogExporterGroupsABatchByScope(t *testing.T) {
	receiver := otlptest.NewReceiver()
	endpoint := serve(t, receiver)
	res := resource.NewSchemaless(attribute.String("service.name", "memcached-operator"))
	e := testExporter(t, Signal{Endpoint: endpoint, Timeout: time.Second}, res)
	// A batch processor exports every record in one batch at Shutdown.
	emitThrough(t, &batching{Exporter: e})

	reqs := receiver.LogRequests()
	require.Len(t, reqs, 1, "one export")
	require.Len(t, reqs[0].GetResourceLogs(), 1, "one resource, ours")
	scopes := reqs[0].GetResourceLogs()[0].GetScopeLogs()
	require.Len(t, scopes, 2, "a ScopeLogs for each scope, in the order they first appear")
	require.Equal(t, "github.com/loam-dev/loam/kube", scopes[0].GetScope().GetName())
	require.Len(t, scopes[0].GetLogRecords(), 2)
	require.Equal(t, "github.com/loam-dev/loam/app", scopes[1].GetScope().GetName())
	require.Len(t, scopes[1].GetLogRecords(), 1)
	require.Empty(t, receiver.Requests()[0].Header.Get("Content-Encoding"), "no gzip unless the Signal says so")
}

// batching is an exporter that holds every record until Shutdown, then
// exports them in one batch.
type batching struct {
	sdklog.Exporter
	held []sdklog.Record
}

// Export holds clones of records.
func (b *batching) Export(_ context.Context, records []sdklog.Record) error {
	for _, r := range records {
		b.held = append(b.held, r.Clone())
	}
	return nil
}

// Shutdown exports what is held, then shuts the exporter down.
func (b *batching) Shutdown(ctx context.Context) error {
	if err := b.Exporter.Export(ctx, b.held); err != nil {
		return err
	}
	return b.Exporter.Shutdown(ctx)
}

// failing answers the first n requests with status, then serves next.
type failing struct {
	n      int32
	status int
	calls  atomic.Int32
	next   http.Handler
}

func (f *failing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.calls.Add(1) <= f.n {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "collector says no", f.status)
		return
	}
	f.next.ServeHTTP(w, r)
}

func TestLogExporterRetries(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			receiver := otlptest.NewReceiver()
			f := &failing{n: 1, status: status, next: receiver}
			e := testExporter(t, Signal{Endpoint: serve(t, f), Timeout: 5 * time.Second, Gzip: true}, resource.Empty())
			var r log.Record
			r.SetBody(attribute.StringValue("once"))
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewSimpleProcessor(e)))
			lp.Logger("test").Emit(t.Context(), r)
			require.NoError(t, lp.Shutdown(t.Context()))

			require.Equal(t, int32(2), f.calls.Load(), "refused once, then accepted")
			logs := receiver.Logs()
			require.Len(t, logs, 1, "the record arrives once")
			require.Equal(t, "once", logs[0].Body)
		})
	}
}

func TestLogExporterFails(t *testing.T) {
	f := &failing{n: 1 << 30, status: http.StatusBadRequest}
	endpoint := serve(t, f)
	e := testExporter(t, Signal{Endpoint: endpoint, Timeout: 5 * time.Second}, resource.Empty())
	var r sdklog.Record
	err := e.Export(t.Context(), []sdklog.Record{r})
	require.ErrorContains(t, err, endpoint, "the error names the endpoint")
	require.ErrorContains(t, err, "400 Bad Request")
	require.ErrorContains(t, err, "collector says no", "and quotes the collector")
	require.Equal(t, int32(1), f.calls.Load(), "a 400 isn't retried")
}

func TestLogExporterGivesUpAtTheTimeout(t *testing.T) {
	f := &failing{n: 1 << 30, status: http.StatusServiceUnavailable}
	endpoint := serve(t, f)
	e := testExporter(t, Signal{Endpoint: endpoint, Timeout: 200 * time.Millisecond}, resource.Empty())
	e.initialBackoff, e.maxBackoff = 10*time.Millisecond, 50*time.Millisecond
	var r sdklog.Record
	err := e.Export(t.Context(), []sdklog.Record{r})
	// The timeout ends the export between two tries (the last answer,
	// 503) or during one (the deadline): which depends on the machine.
	require.Error(t, err)
	if !errors.Is(err, context.DeadlineExceeded) {
		require.ErrorContains(t, err, "503 Service Unavailable")
	}
	require.ErrorContains(t, err, endpoint)
	require.Greater(t, f.calls.Load(), int32(1), "retried until the timeout")
}

func TestLogExporterAfterShutdownSendsNothing(t *testing.T) {
	f := &failing{n: 1 << 30, status: http.StatusBadRequest}
	e := testExporter(t, Signal{Endpoint: serve(t, f), Timeout: time.Second}, resource.Empty())
	require.NoError(t, e.ForceFlush(t.Context()))
	require.NoError(t, e.Shutdown(t.Context()))
	require.NoError(t, e.Shutdown(t.Context()), "a second Shutdown does nothing")
	require.NoError(t, e.ForceFlush(t.Context()))
	var r sdklog.Record
	require.ErrorIs(t, e.Export(t.Context(), []sdklog.Record{r}), sdklog.ErrExporterShutdown)
	require.Zero(t, f.calls.Load(), "nothing sent")
}
