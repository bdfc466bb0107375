package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/ports"
)

var (
	namespaced = ports.Key{Namespace: "cache", Name: "m1"}
	cluster    = ports.Key{Name: "default-deny"}
)

func TestNewRecorderReportsEveryMistake(t *testing.T) {
	_, err := telemetry.NewRecorder(telemetry.Config{Verbosity: -1})
	require.EqualError(t, err, "telemetry: Config.Name is empty\n"+
		"telemetry: Config.Kind is empty\n"+
		"telemetry: Config.TracerProvider is nil\n"+
		"telemetry: Config.MeterProvider is nil\n"+
		"telemetry: Config.LoggerProvider is nil\n"+
		"telemetry: Config.Verbosity is -1, below 0")
}

func TestAReconcileIsARootSpanWithItsRequestsAsChildren(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   ports.Key
		attrs map[string]string
	}{
		{"namespaced", namespaced, map[string]string{
			"k8s.namespace.name": "cache", "loam.kube.object.name": "m1", "loam.kube.controller.reconcile.outcome": "success",
		}},
		{"cluster-scoped", cluster, map[string]string{
			"loam.kube.object.name": "default-deny", "loam.kube.controller.reconcile.outcome": "success",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			tracer := tel.TracerProvider.Tracer("test")
			// A span already in the context, such as a worker's, is no
			// parent of a reconcile: nothing a trace can link to caused it.
			ctx, outer := tracer.Start(context.Background(), "outer")

			ctx = rec.ReconcileStarted(ctx, tc.key)
			_, request := tracer.Start(ctx, "PATCH", trace.WithSpanKind(trace.SpanKindClient))
			request.End()
			rec.ReconcileEnded(ctx, tc.key, ports.Report{Outcome: ports.OutcomeSuccess, Duration: time.Millisecond})
			outer.End()

			spans := tel.SpansNamed("reconcile Memcached")
			require.Len(t, spans, 1)
			reconcile := spans[0]
			require.False(t, reconcile.Parent.IsValid(), "a root span")
			require.NotEqual(t, outer.SpanContext().TraceID(), reconcile.SpanContext.TraceID(), "a trace of its own")
			require.Equal(t, trace.SpanKindInternal, reconcile.SpanKind)
			require.Equal(t, tc.attrs, attrs(reconcile.Attributes))
			require.Equal(t, ports.ScopeName, reconcile.InstrumentationScope.Name)
			require.Equal(t, codes.Unset, reconcile.Status.Code, "a success sets no status")
			require.Empty(t, reconcile.Events)

			children := tel.SpansNamed("PATCH")
			require.Len(t, children, 1)
			require.Equal(t, reconcile.SpanContext.SpanID(), children[0].Parent.SpanID(), "the request is the reconcile's child")
			require.Equal(t, reconcile.SpanContext.TraceID(), children[0].SpanContext.TraceID())
			require.Empty(t, tel.Records(), "a success logs nothing")
		})
	}
}

func TestAFailedReconcileIsAnErrorSpanAndOneWarnRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    ports.Key
		object map[string]string
	}{
		{"namespaced", namespaced, map[string]string{"k8s.namespace.name": "cache", "loam.kube.object.name": "m1"}},
		{"cluster-scoped", cluster, map[string]string{"loam.kube.object.name": "default-deny"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			failure := fmt.Errorf("applying status: %w", errors.New("the server is on fire"))

			ctx := rec.ReconcileStarted(context.Background(), tc.key)
			rec.ReconcileEnded(ctx, tc.key, ports.Report{Outcome: ports.OutcomeError, Err: failure, Duration: time.Millisecond})

			span := tel.SpansNamed("reconcile Memcached")[0]
			require.Equal(t, "error", attrs(span.Attributes)["loam.kube.controller.reconcile.outcome"])
			require.Equal(t, sdktrace.Status{Code: codes.Error, Description: failure.Error()}, span.Status)
			require.Len(t, span.Events, 1)
			require.Equal(t, "exception", span.Events[0].Name)
			require.Equal(t, failure.Error(), attrs(span.Events[0].Attributes)["exception.message"])

			records := tel.Records()
			require.Len(t, records, 1)
			r := records[0]
			require.Equal(t, "reconcile failed", r.Body().AsString())
			require.Equal(t, log.SeverityWarn, r.Severity())
			require.Equal(t, "WARN", r.SeverityText())
			require.Equal(t, ports.ScopeName, r.InstrumentationScope().Name)
			require.Equal(t, span.SpanContext.TraceID(), r.TraceID(), "in the span's context")
			require.Equal(t, span.SpanContext.SpanID(), r.SpanID(), "in the span's context")

			want := map[string]string{
				"loam.kube.controller.name": controllerName,
				"exception.message":         "applying status: the server is on fire",
			}
			for k, v := range tc.object {
				want[k] = v
			}
			got := recordAttrs(r)
			// The SDK adds exception.type from the record's error, as it
			// sees fit.
			require.NotEmpty(t, got["exception.type"])
			delete(got, "exception.type")
			require.Equal(t, want, got)
		})
	}
}

func TestAPanicIsAnExceptionEventAndOneErrorRecord(t *testing.T) {
	rec, tel := newRecorder(t)
	stack := []byte("goroutine 7 [running]:\nmain.(*memcached).Reconcile(...)\n\t/src/memcached.go:42 +0x1d\n")
	p := &ports.Panic{Value: fmt.Errorf("no replicas: %w", errors.ErrUnsupported), Stack: stack}

	ctx := rec.ReconcileStarted(context.Background(), namespaced)
	rec.ReconcileEnded(ctx, namespaced, ports.Report{Outcome: ports.OutcomePanic, Panic: p, Duration: time.Millisecond})

	exception := map[string]string{
		"exception.type":       "*fmt.wrapError",
		"exception.message":    "no replicas: unsupported operation",
		"exception.stacktrace": string(stack),
	}
	span := tel.SpansNamed("reconcile Memcached")[0]
	require.Equal(t, "panic", attrs(span.Attributes)["loam.kube.controller.reconcile.outcome"])
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "panic: no replicas: unsupported operation"}, span.Status)
	require.Len(t, span.Events, 1)
	require.Equal(t, "exception", span.Events[0].Name)
	require.Equal(t, exception, attrs(span.Events[0].Attributes))

	require.Empty(t, recordsWithBody(tel, "reconcile failed"), "a panic is no failure")
	records := tel.Records()
	require.Len(t, records, 1)
	r := records[0]
	require.Equal(t, "reconcile panicked", r.Body().AsString())
	require.Equal(t, log.SeverityError, r.Severity())
	require.Equal(t, "ERROR", r.SeverityText())
	require.Equal(t, span.SpanContext.TraceID(), r.TraceID(), "in the span's context")
	require.Equal(t, span.SpanContext.SpanID(), r.SpanID(), "in the span's context")
	want := map[string]string{
		"loam.kube.controller.name": controllerName,
		"k8s.namespace.name":        "cache",
		"loam.kube.object.name":     "m1",
	}
	for k, v := range exception {
		want[k] = v
	}
	require.Equal(t, want, recordAttrs(r))
}

func TestAPanicValueOfAnyTypeIsNamed(t *testing.T) {
	for _, tc := range []struct {
		value        any
		typ, message string
	}{
		{value: "boom", typ: "string", message: "boom"},
		{value: 42, typ: "int", message: "42"},
		{value: nil, typ: "<nil>", message: "<nil>"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			rec, tel := newRecorder(t)
			ctx := rec.ReconcileStarted(context.Background(), cluster)
			rec.ReconcileEnded(ctx, cluster, ports.Report{Outcome: ports.OutcomePanic, Panic: &ports.Panic{Value: tc.value}})

			got := attrs(tel.SpansNamed("reconcile Memcached")[0].Events[0].Attributes)
			require.Equal(t, tc.typ, got["exception.type"])
			require.Equal(t, tc.message, got["exception.message"])
			require.Len(t, recordsWithBody(tel, "reconcile panicked"), 1)
		})
	}
}

// timeoutError stands for the Report.Err of a reconcile that timed out, as
// domain/reconcile writes it.
type timeoutError struct{}

func (timeoutError) Error() string {
	return "reconcile of cache/m1 timed out after 2s: context deadline exceeded"
}

func (timeoutError) Unwrap() error { return context.DeadlineExceeded }

func TestATimedOutReconcileIsAnErrorSpanAndOneWarnRecordNamingTheTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		key    ports.Key
		object map[string]string
	}{
		{"namespaced", namespaced, map[string]string{"k8s.namespace.name": "cache", "loam.kube.object.name": "m1"}},
		{"cluster-scoped", cluster, map[string]string{"loam.kube.object.name": "default-deny"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			// What the Reconciler returned follows the deadline's error.
			failure := errors.Join(timeoutError{}, fmt.Errorf("getting configmap flags: %w", context.DeadlineExceeded))

			ctx := rec.ReconcileStarted(context.Background(), tc.key)
			rec.ReconcileEnded(ctx, tc.key, ports.Report{
				Outcome: ports.OutcomeTimeout, Err: failure, Timeout: 2 * time.Second, Duration: 2 * time.Second,
			})

			span := tel.SpansNamed("reconcile Memcached")[0]
			want := map[string]string{
				"loam.kube.controller.reconcile.outcome": "timeout",
				"loam.kube.controller.reconcile.timeout": "2s",
			}
			for k, v := range tc.object {
				want[k] = v
			}
			require.Equal(t, want, attrs(span.Attributes))
			require.Equal(t, sdktrace.Status{Code: codes.Error, Description: failure.Error()}, span.Status)
			require.Len(t, span.Events, 1)
			require.Equal(t, "exception", span.Events[0].Name)
			require.Equal(t, failure.Error(), attrs(span.Events[0].Attributes)["exception.message"])

			require.Empty(t, recordsWithBody(tel, "reconcile failed"), "a timeout is a record of its own")
			records := tel.Records()
			require.Len(t, records, 1)
			r := records[0]
			require.Equal(t, "reconcile timed out", r.Body().AsString())
			require.Equal(t, log.SeverityWarn, r.Severity())
			require.Equal(t, "WARN", r.SeverityText())
			require.Equal(t, ports.ScopeName, r.InstrumentationScope().Name)
			require.Equal(t, span.SpanContext.TraceID(), r.TraceID(), "in the span's context")
			require.Equal(t, span.SpanContext.SpanID(), r.SpanID(), "in the span's context")

			want = map[string]string{
				"loam.kube.controller.name":              controllerName,
				"loam.kube.controller.reconcile.timeout": "2s",
				"exception.message": "reconcile of cache/m1 timed out after 2s: context deadline exceeded\n" +
					"getting configmap flags: context deadline exceeded",
			}
			for k, v := range tc.object {
				want[k] = v
			}
			got := recordAttrs(r)
			require.NotEmpty(t, got["exception.type"])
			delete(got, "exception.type")
			require.Equal(t, want, got)
		})
	}
}

func TestAReportMissingItsErrorOrPanicIsStillRecorded(t *testing.T) {
	rec, tel := newRecorder(t)
	for _, r := range []ports.Report{
		{Outcome: ports.OutcomeError},
		{Outcome: ports.OutcomePanic},
		{Outcome: ports.OutcomeTimeout, Timeout: time.Minute},
	} {
		ctx := rec.ReconcileStarted(context.Background(), cluster)
		rec.ReconcileEnded(ctx, cluster, r)
	}
	spans := tel.SpansNamed("reconcile Memcached")
	require.Len(t, spans, 3)
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "reconcile failed with no error"}, spans[0].Status)
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "panic: <nil>"}, spans[1].Status)
	require.Equal(t, sdktrace.Status{Code: codes.Error, Description: "reconcile timed out after 1m0s"}, spans[2].Status)
	require.Len(t, recordsWithBody(tel, "reconcile failed"), 1)
	require.Len(t, recordsWithBody(tel, "reconcile panicked"), 1)
	require.Len(t, recordsWithBody(tel, "reconcile timed out"), 1)
}

func TestAStrippedScenarioIsAStripEventOnTheReconcileSpan(t *testing.T) {
	decodeErr := &fit.DecodeError{Err: errors.New("invalid baggage: a member without a value")}
	for _, tc := range []struct {
		name  string
		err   error
		attrs map[string]string
	}{
		{"an object trust doesn't trust", nil, map[string]string{}},
		{"an annotation that isn't baggage", decodeErr, map[string]string{
			"error.type":    "github.com/loam-dev/loam/app/fault/fit.DecodeError",
			"error.message": decodeErr.Error(),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			ctx := rec.ReconcileStarted(context.Background(), namespaced)
			rec.ScenarioStripped(ctx, tc.err)
			rec.ReconcileEnded(ctx, namespaced, ports.Report{Outcome: ports.OutcomeSuccess})

			span := tel.SpansNamed("reconcile Memcached")[0]
			require.Len(t, span.Events, 1)
			require.Equal(t, fault.StripEvent, span.Events[0].Name)
			require.Equal(t, tc.attrs, attrs(span.Events[0].Attributes))
			require.Equal(t, codes.Unset, span.Status.Code, "a strip is no failure")
			require.Empty(t, tel.Records())
		})
	}
}

func TestReconcileDurationHasTheOutcome(t *testing.T) {
	rec, tel := newRecorder(t)
	for _, r := range []ports.Report{
		{Outcome: ports.OutcomeSuccess, Duration: 10 * time.Millisecond},
		{Outcome: ports.OutcomeError, Err: errors.New("boom"), Duration: 20 * time.Millisecond},
		{Outcome: ports.OutcomePanic, Panic: &ports.Panic{Value: "boom"}, Duration: 30 * time.Millisecond},
		// A Result.After is a success.
		{Outcome: ports.OutcomeSuccess, Duration: 40 * time.Millisecond},
		{Outcome: ports.OutcomeTimeout, Err: timeoutError{}, Timeout: 2 * time.Second, Duration: 2 * time.Second},
	} {
		ctx := rec.ReconcileStarted(context.Background(), namespaced)
		rec.ReconcileEnded(ctx, namespaced, r)
	}

	require.ElementsMatch(t, []histogramPoint{
		{Attributes: outcome("success"), Count: 2, Sum: 0.05},
		{Attributes: outcome("error"), Count: 1, Sum: 0.02},
		{Attributes: outcome("panic"), Count: 1, Sum: 0.03},
		{Attributes: outcome("timeout"), Count: 1, Sum: 2},
	}, histogram(t, tel, telemetry.ReconcileDurationName))
	require.Len(t, tel.SpansNamed("reconcile Memcached"), 5, "every reconcile ends its span")
}

// outcome returns reconcile.duration's attributes for outcome.
func outcome(outcome string) map[string]string {
	return map[string]string{
		"loam.kube.controller.name":              controllerName,
		"loam.kube.controller.reconcile.outcome": outcome,
	}
}

func TestTheRelatedChangesThatQueuedAReconcileAreOnItsSpan(t *testing.T) {
	flags := ports.Cause{Resource: "configmaps", Key: ports.Key{Namespace: "cache", Name: "flags"}}
	issuer := ports.Cause{Resource: "cert-manager.io/v1, Resource=clusterissuers", Key: ports.Key{Name: "letsencrypt"}}
	// onSpan is the reconcile span's attributes: the object's and kvs.
	onSpan := func(kvs ...attribute.KeyValue) []attribute.KeyValue {
		return append([]attribute.KeyValue{
			telemetry.NamespaceKey.String("cache"), telemetry.ObjectNameKey.String("m1"), telemetry.OutcomeKey.String("success"),
		}, kvs...)
	}
	for _, tc := range []struct {
		name    string
		causes  []ports.Cause
		dropped int
		want    []attribute.KeyValue
	}{
		{
			name:   "every cause, namespaced or not",
			causes: []ports.Cause{flags, issuer},
			want: onSpan(telemetry.RelatedChangesKey.StringSlice([]string{
				"configmaps cache/flags",
				"cert-manager.io/v1, Resource=clusterissuers letsencrypt",
			})),
		},
		{
			name:    "the changes dropped beyond the bound are counted",
			causes:  []ports.Cause{flags},
			dropped: 3,
			want: onSpan(
				telemetry.RelatedChangesKey.StringSlice([]string{"configmaps cache/flags"}),
				telemetry.RelatedDroppedKey.Int(3)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			ctx := rec.ReconcileStarted(context.Background(), namespaced)
			rec.ReconcileCaused(ctx, tc.causes, tc.dropped)
			rec.ReconcileEnded(ctx, namespaced, ports.Report{Outcome: ports.OutcomeSuccess})

			span := tel.SpansNamed("reconcile Memcached")[0]
			require.ElementsMatch(t, tc.want, span.Attributes)
			require.Empty(t, span.Events)
			require.Empty(t, tel.Records(), "a cause is no failure")
		})
	}
}

func TestAMappingPanicIsOneErrorRecord(t *testing.T) {
	stack := []byte("goroutine 9 [running]:\nmain.flagsOf(...)\n\t/src/memcached.go:80 +0x2a\n")
	for _, tc := range []struct {
		name  string
		what  string
		cause ports.Cause
		// object is the record's attributes that name the related object.
		object map[string]string
	}{
		{
			name:  "a namespaced related object",
			what:  "the mapping of configmaps",
			cause: ports.Cause{Resource: "configmaps", Key: ports.Key{Namespace: "cache", Name: "flags"}},
			object: map[string]string{
				"loam.kube.related.resource": "configmaps",
				"k8s.namespace.name":         "cache",
				"loam.kube.object.name":      "flags",
			},
		},
		{
			name:  "a cluster-scoped related object",
			what:  `index "issuer"`,
			cause: ports.Cause{Resource: "cert-manager.io/v1, Resource=clusterissuers", Key: ports.Key{Name: "letsencrypt"}},
			object: map[string]string{
				"loam.kube.related.resource": "cert-manager.io/v1, Resource=clusterissuers",
				"loam.kube.object.name":      "letsencrypt",
			},
		},
		{
			name:   "an object it doesn't know",
			what:   `index "configMap"`,
			object: map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			rec.MappingPanicked(context.Background(), tc.what, tc.cause, &ports.Panic{Value: "no flags", Stack: stack})

			records := tel.Records()
			require.Len(t, records, 1)
			r := records[0]
			require.Equal(t, "mapping panicked", r.Body().AsString())
			require.Equal(t, log.SeverityError, r.Severity())
			require.Equal(t, "ERROR", r.SeverityText())
			require.Equal(t, ports.ScopeName, r.InstrumentationScope().Name)
			want := map[string]string{
				"loam.kube.controller.name":    controllerName,
				"loam.kube.controller.mapping": tc.what,
				"exception.type":               "string",
				"exception.message":            "no flags",
				"exception.stacktrace":         string(stack),
			}
			for k, v := range tc.object {
				want[k] = v
			}
			require.Equal(t, want, recordAttrs(r))
			require.Empty(t, tel.Spans(), "no reconcile runs")
		})
	}
}

// A pass stuck in a hand-off is one ERROR record naming the Lease it
// keeps: its shard's, or, unsharded (0 of 0), the controller's.
func TestAPassStuckInAHandOffIsOneErrorRecordNamingItsLease(t *testing.T) {
	for _, tc := range []struct {
		name         string
		shard, count int
		lease        string
	}{
		{"a shard's", 3, 8, "shard 3 of 8 keeps its Lease"},
		{"an unsharded controller's", 0, 0, "the controller keeps its Lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			rec.HandOffStuck(context.Background(), ports.Key{Namespace: "cache", Name: "memcached"}, tc.shard, tc.count, 22*time.Second)
			records := tel.Records()
			require.Len(t, records, 1)
			r := records[0]
			require.Equal(t, "reconcile stuck in a hand-off", r.Body().AsString())
			require.Equal(t, log.SeverityError, r.Severity())
			got := recordAttrs(r)
			require.Equal(t, "22s", got["loam.kube.controller.reconcile.running"])
			require.Contains(t, got["exception.message"], "the reconcile of cache/memcached has run 22s")
			require.Contains(t, got["exception.message"], tc.lease)
		})
	}
}
