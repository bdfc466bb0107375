package apptest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

func TestTelemetry_keeps_spans_as_they_end(t *testing.T) {
	tel := apptest.NewTelemetry()
	tracer := tel.TracerProvider.Tracer("test")

	ctx, parent := tracer.Start(t.Context(), "reconcile")
	_, child := tracer.Start(ctx, "GET")
	require.Empty(t, tel.Spans(), "a span is kept when it ends")
	child.End()
	require.Len(t, tel.Spans(), 1, "at once, without a flush")
	_, other := tracer.Start(ctx, "GET")
	other.End()
	parent.End()

	spans := tel.Spans()
	require.Len(t, spans, 3)
	require.Equal(t, []string{"GET", "GET", "reconcile"}, []string{spans[0].Name, spans[1].Name, spans[2].Name})
	gets := tel.SpansNamed("GET")
	require.Len(t, gets, 2)
	require.Equal(t, spans[2].SpanContext.SpanID(), gets[0].Parent.SpanID())
	require.Empty(t, tel.SpansNamed("PUT"))
}

func TestTelemetry_Running_holds_the_spans_not_yet_ended(t *testing.T) {
	tel := apptest.NewTelemetry()
	tracer := tel.TracerProvider.Tracer("test")
	require.Empty(t, tel.Running())

	ctx, parent := tracer.Start(t.Context(), "reconcile", trace.WithAttributes(attribute.String("k", "v")))
	_, child := tracer.Start(ctx, "GET")
	running := tel.Running()
	require.Len(t, running, 2, "each span from its start")
	require.Equal(t, []string{"reconcile", "GET"}, []string{running[0].Name, running[1].Name}, "in the order they started")
	require.Equal(t, []attribute.KeyValue{attribute.String("k", "v")}, running[0].Attributes)
	require.True(t, running[0].EndTime.IsZero())

	child.End()
	running = tel.Running()
	require.Len(t, running, 1, "an ended span runs no more")
	require.Equal(t, "reconcile", running[0].Name)
	require.Len(t, tel.Spans(), 1)

	parent.End()
	require.Empty(t, tel.Running())
	require.Len(t, tel.Spans(), 2)
}

func TestTelemetry_collects_metrics(t *testing.T) {
	tel := apptest.NewTelemetry()
	meter := tel.MeterProvider.Meter("test")
	adds, err := meter.Int64Counter("queue.adds")
	require.NoError(t, err)
	adds.Add(t.Context(), 2)
	adds.Add(t.Context(), 3)

	m, err := tel.Metric(t.Context(), "queue.adds")
	require.NoError(t, err)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "a counter is a sum, not %T", m.Data)
	require.Len(t, sum.DataPoints, 1)
	require.Equal(t, int64(5), sum.DataPoints[0].Value)

	_, err = tel.Metric(t.Context(), "queue.depth")
	require.ErrorIs(t, err, apptest.ErrNotRecorded)
	require.EqualError(t, err, `metric "queue.depth": apptest: not recorded (recorded: [queue.adds])`)

	rm, err := tel.Metrics(t.Context())
	require.NoError(t, err)
	require.Len(t, rm.ScopeMetrics, 1)
	require.Equal(t, "test", rm.ScopeMetrics[0].Scope.Name)
}

func TestTelemetry_Total_sums_every_data_point(t *testing.T) {
	tel := apptest.NewTelemetry()
	meter := tel.MeterProvider.Meter("test")
	adds, err := meter.Int64Counter("queue.adds")
	require.NoError(t, err)
	adds.Add(t.Context(), 2, metric.WithAttributes(attribute.String("priority", "change")))
	adds.Add(t.Context(), 3, metric.WithAttributes(attribute.String("priority", "background")))
	depth, err := meter.Int64Gauge("queue.depth")
	require.NoError(t, err)
	depth.Record(t.Context(), 4, metric.WithAttributes(attribute.String("queue", "a")))
	depth.Record(t.Context(), 1, metric.WithAttributes(attribute.String("queue", "b")))
	seconds, err := meter.Float64Counter("queue.seconds")
	require.NoError(t, err)
	seconds.Add(t.Context(), 1.5)

	for name, want := range map[string]int64{"queue.adds": 5, "queue.depth": 5} {
		n, err := tel.Total(t.Context(), name)
		require.NoError(t, err, name)
		require.Equal(t, want, n, name)
	}
	_, err = tel.Total(t.Context(), "queue.retries")
	require.ErrorIs(t, err, apptest.ErrNotRecorded)
	_, err = tel.Total(t.Context(), "queue.seconds")
	require.EqualError(t, err, `metric "queue.seconds" is a metricdata.Sum[float64], not an int64 sum or gauge`)

	// TotalBy sums by one attribute, the points without it under "".
	adds.Add(t.Context(), 7)
	by, err := tel.TotalBy(t.Context(), "queue.adds", "priority")
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"change": 2, "background": 3, "": 7}, by)
	_, err = tel.TotalBy(t.Context(), "queue.seconds", "priority")
	require.EqualError(t, err, `metric "queue.seconds" is a metricdata.Sum[float64], not an int64 sum or gauge`)
}

func TestTelemetry_keeps_log_records(t *testing.T) {
	tel := apptest.NewTelemetry()
	logger := tel.LoggerProvider.Logger("test")

	var r log.Record
	r.SetBody(attribute.StringValue("reconciled"))
	r.SetSeverity(log.SeverityInfo)
	r.AddAttributes(attribute.String("name", "default/cache"))
	logger.Emit(t.Context(), r)

	records := tel.Records()
	require.Len(t, records, 1)
	require.Equal(t, "reconciled", records[0].Body().AsString())
	require.Equal(t, log.SeverityInfo, records[0].Severity())
	require.Equal(t, "test", records[0].InstrumentationScope().Name)
	var attrs []attribute.KeyValue
	records[0].WalkAttributes(func(kv attribute.KeyValue) bool {
		attrs = append(attrs, kv)
		return true
	})
	require.Equal(t, []attribute.KeyValue{attribute.String("name", "default/cache")}, attrs)
}

func TestTelemetry_propagates_W3C_trace_context_and_baggage(t *testing.T) {
	tel := apptest.NewTelemetry()
	ctx, span := tel.TracerProvider.Tracer("test").Start(t.Context(), "request")
	defer span.End()
	member, err := baggage.NewMember("fit.scenario", "abort")
	require.NoError(t, err)
	bag, err := baggage.New(member)
	require.NoError(t, err)
	ctx = baggage.ContextWithBaggage(ctx, bag)

	carrier := propagation.MapCarrier{}
	tel.Propagator.Inject(ctx, carrier)
	require.Contains(t, carrier["traceparent"], span.SpanContext().TraceID().String())
	require.Equal(t, "fit.scenario=abort", carrier["baggage"])
}

func TestTelemetry_keeps_what_it_recorded_after_Shutdown(t *testing.T) {
	tel := apptest.NewTelemetry()
	ctx := t.Context()
	_, span := tel.TracerProvider.Tracer("test").Start(ctx, "before")
	span.End()
	c, err := tel.MeterProvider.Meter("test").Int64Counter("count")
	require.NoError(t, err)
	c.Add(ctx, 1, metric.WithAttributes(attribute.String("phase", "before")))
	var r log.Record
	r.SetBody(attribute.StringValue("before"))
	tel.LoggerProvider.Logger("test").Emit(ctx, r)

	require.NoError(t, tel.Shutdown(ctx))
	require.NoError(t, tel.Shutdown(ctx), "a second Shutdown does nothing")

	// After Shutdown, what the App records is dropped, as a stopped App's.
	_, late := tel.TracerProvider.Tracer("test").Start(ctx, "after")
	late.End()
	c.Add(ctx, 10, metric.WithAttributes(attribute.String("phase", "after")))
	r.SetBody(attribute.StringValue("after"))
	tel.LoggerProvider.Logger("test").Emit(ctx, r)

	require.Len(t, tel.Spans(), 1)
	require.Equal(t, "before", tel.Spans()[0].Name)
	m, err := tel.Metric(ctx, "count")
	require.NoError(t, err)
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "a counter is a sum, not %T", m.Data)
	require.Len(t, sum.DataPoints, 1)
	require.Equal(t, int64(1), sum.DataPoints[0].Value)
	records := tel.Records()
	require.Len(t, records, 1)
	require.Equal(t, "before", records[0].Body().AsString())
}

func TestTelemetry_Builder_hands_an_App_the_providers(t *testing.T) {
	tel := apptest.NewTelemetry()
	got, shutdown, err := tel.Builder()(t.Context(), app.Process{})
	require.NoError(t, err)
	require.Equal(t, tel.Telemetry, got)
	require.NoError(t, shutdown(context.WithoutCancel(t.Context())))
	_, err = tel.Metrics(t.Context())
	require.NoError(t, err, "the last collection stays readable")
}

func TestTelemetry_Records_are_copies(t *testing.T) {
	tel := apptest.NewTelemetry()
	var r log.Record
	r.SetBody(attribute.StringValue("kept"))
	tel.LoggerProvider.Logger("test").Emit(t.Context(), r)

	first := tel.Records()
	first[0].SetBody(attribute.StringValue("changed"))
	require.Equal(t, "kept", tel.Records()[0].Body().AsString())
}

func TestTelemetry_ExceptionMessages_reads_the_records_with_a_body(t *testing.T) {
	tel := apptest.NewTelemetry()
	logger := tel.LoggerProvider.Logger("test")
	emit := func(body string, attrs ...attribute.KeyValue) {
		var r log.Record
		r.SetBody(attribute.StringValue(body))
		r.AddAttributes(attrs...)
		logger.Emit(t.Context(), r)
	}
	emit("reconcile failed", attribute.String("loam.kube.object.name", "a"), attribute.String("exception.message", "first"))
	emit("something else", attribute.String("exception.message", "not this one"))
	emit("reconcile failed")
	emit("reconcile failed", attribute.String("exception.message", "third"))

	require.Equal(t, []string{"first", "", "third"}, tel.ExceptionMessages("reconcile failed"))
	require.Empty(t, tel.ExceptionMessages("nothing logged"))
}
