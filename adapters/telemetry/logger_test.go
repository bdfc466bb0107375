package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"k8s.io/klog/v2"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/ports"
)

// newLogger returns a Recorder's Logger, at verbosity, writing to a fresh
// in-memory Telemetry.
func newLogger(t *testing.T, verbosity int) (logr.Logger, *apptest.Telemetry) {
	t.Helper()
	tel := apptest.NewTelemetry()
	rec, err := telemetry.NewRecorder(telemetry.Config{
		Name:           controllerName,
		Kind:           kind,
		TracerProvider: tel.TracerProvider,
		MeterProvider:  tel.MeterProvider,
		LoggerProvider: tel.LoggerProvider,
		Verbosity:      verbosity,
	})
	require.NoError(t, err)
	return rec.Logger(), tel
}

// logged is what a test checks of one record.
type logged struct {
	Severity log.Severity
	Text     string
	Body     string
}

func loggedRecords(tel *apptest.Telemetry) []logged {
	var out []logged
	for _, r := range tel.Records() {
		out = append(out, logged{Severity: r.Severity(), Text: r.SeverityText(), Body: r.Body().AsString()})
	}
	return out
}

func TestTheLoggerRecordsVerbosityZeroAndEveryError(t *testing.T) {
	logger, tel := newLogger(t, 0)
	logger.Info("watch ended")
	logger.V(1).Info("watch closed with unexpected EOF")
	logger.V(2).Info("caches populated")
	logger.V(4).Info("forcing resync")
	logger.Error(errors.New("connection refused"), "failed to watch")
	logger.V(3).Error(errors.New("lease taken"), "an Error at any verbosity")
	logger.Error(fmt.Errorf("get lease: %w", context.Canceled), "Error retrieving lease lock")

	require.True(t, logger.Enabled())
	require.False(t, logger.V(1).Enabled())
	require.Equal(t, []logged{
		{log.SeverityInfo, "INFO", "watch ended"},
		{log.SeverityError, "ERROR", "failed to watch"},
		{log.SeverityError, "ERROR", "an Error at any verbosity"},
		// Cut short by its caller's stopping, as a Lease given up is.
		{log.SeverityInfo, "INFO", "Error retrieving lease lock"},
	}, loggedRecords(tel))
	for _, r := range tel.Records() {
		require.Equal(t, ports.ScopeName, r.InstrumentationScope().Name)
		require.False(t, r.Timestamp().IsZero())
	}
}

func TestTheLoggersVerbosityRecordsDebug(t *testing.T) {
	logger, tel := newLogger(t, 2)
	logger.Info("zero")
	logger.V(1).Info("one")
	logger.V(2).Info("two")
	logger.V(3).Info("three")
	require.Equal(t, []logged{
		{log.SeverityInfo, "INFO", "zero"},
		{log.SeverityDebug4, "DEBUG4", "one"},
		{log.SeverityDebug3, "DEBUG3", "two"},
	}, loggedRecords(tel))
}

func TestTheLoggerAsksTheProviderWhetherItRecords(t *testing.T) {
	rec, err := telemetry.NewRecorder(telemetry.Config{
		Name:           controllerName,
		Kind:           kind,
		TracerProvider: apptest.NewTelemetry().TracerProvider,
		MeterProvider:  apptest.NewTelemetry().MeterProvider,
		LoggerProvider: lognoop.NewLoggerProvider(),
	})
	require.NoError(t, err)
	require.False(t, rec.Logger().Enabled(), "a provider that records nothing costs client-go no attributes")
}

func TestTheLoggerKeepsItsNameAndValues(t *testing.T) {
	logger, tel := newLogger(t, 0)
	election := logger.WithName("leaderelection").WithName("lease").WithValues("lease", "kube-system/memcached")
	// Two loggers from one parent don't share their values.
	first := election.WithValues("attempt", 1)
	second := election.WithValues("attempt", 2, "holder", "pod-b")

	first.Info("acquiring")
	second.Error(errors.New("lease held"), "failed to acquire")
	logger.Info("no name")

	records := tel.Records()
	require.Len(t, records, 3)
	require.Equal(t, map[string]string{
		"loam.kube.controller.name": controllerName,
		"logger":                    "leaderelection/lease",
		"lease":                     "kube-system/memcached",
		"attempt":                   "1",
	}, recordAttrs(records[0]))
	got := recordAttrs(records[1])
	require.NotEmpty(t, got["exception.type"], "the SDK's, from the record's error")
	delete(got, "exception.type")
	require.Equal(t, map[string]string{
		"loam.kube.controller.name": controllerName,
		"logger":                    "leaderelection/lease",
		"lease":                     "kube-system/memcached",
		"attempt":                   "2",
		"holder":                    "pod-b",
		"exception.message":         "lease held",
	}, got)
	require.Equal(t, map[string]string{"loam.kube.controller.name": controllerName}, recordAttrs(records[2]))
}

type stringer struct{}

func (stringer) String() string { return "a stringer" }

type panicker struct{}

func (panicker) String() string { panic("String panicked") }

type marshaler struct{}

func (marshaler) MarshalLog() any { return map[string]int{"b": 2, "a": 1} }

type reference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Hidden    string `json:"-"`
	Plain     int
	private   int
}

func TestTheLoggerTurnsValuesIntoAttributes(t *testing.T) {
	var nilErr *errorType
	for _, tc := range []struct {
		name  string
		value any
		want  attribute.Value
	}{
		{"string", "cm-1", attribute.StringValue("cm-1")},
		{"int", 42, attribute.Int64Value(42)},
		{"int32", int32(-7), attribute.Int64Value(-7)},
		{"uint64 past int64", uint64(math.MaxUint64), attribute.StringValue("18446744073709551615")},
		{"float", 0.5, attribute.Float64Value(0.5)},
		{"bool", true, attribute.BoolValue(true)},
		{"bytes", []byte("hi"), attribute.ByteSliceValue([]byte("hi"))},
		{"error", errors.New("boom"), attribute.StringValue("boom")},
		{"a duration, a Stringer", 1500 * time.Millisecond, attribute.StringValue("1.5s")},
		{"Stringer", stringer{}, attribute.StringValue("a stringer")},
		{"a panicking Stringer", panicker{}, attribute.StringValue("<panic: String panicked>")},
		{"nil", nil, attribute.Value{}},
		{"a nil pointer", nilErr, attribute.Value{}},
		{"a pointer", new(7), attribute.Int64Value(7)},
		{"klog.KObj, a Marshaler", klog.KRef("cache", "m1"), attribute.MapValue(
			attribute.String("name", "m1"), attribute.String("namespace", "cache"))},
		{"klog.KObj, cluster-scoped", klog.KRef("", "default-deny"), attribute.MapValue(
			attribute.String("name", "default-deny"))},
		{"a Marshaler's map, sorted", marshaler{}, attribute.MapValue(attribute.Int("a", 1), attribute.Int("b", 2))},
		{"slice", []string{"a", "b"}, attribute.SliceValue(attribute.StringValue("a"), attribute.StringValue("b"))},
		{"struct", reference{Name: "n", Hidden: "h", Plain: 3, private: 4}, attribute.MapValue(
			attribute.String("name", "n"), attribute.Int("Plain", 3))},
		{"anything else, in fmt's form", complex(1, 2), attribute.StringValue("(1+2i)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger, tel := newLogger(t, 0)
			logger.Info("value", "v", tc.value)
			records := tel.Records()
			require.Len(t, records, 1)
			var got attribute.Value
			records[0].WalkAttributes(func(kv attribute.KeyValue) bool {
				if kv.Key == "v" {
					got = kv.Value
				}
				return true
			})
			require.Equal(t, tc.want.Type(), got.Type(), "%s", got.String())
			require.Equal(t, tc.want.String(), got.String())
		})
	}
}

type errorType struct{}

func (*errorType) Error() string { return "never" }

func TestTheLoggerKeepsOddKeysAndValues(t *testing.T) {
	logger, tel := newLogger(t, 0)
	logger.Info("odd", 7, "seven", "dangling")
	require.Equal(t, map[string]string{
		"loam.kube.controller.name": controllerName,
		"7":                         "seven",
		"dangling":                  "<no-value>",
	}, recordAttrs(tel.Records()[0]))
}

// A Reconciler logs through klog.FromContext, or logr.FromContext, of its
// context: its records name the controller and the object, and belong to
// the reconcile's trace, so a log backend finds them from the reconcile's
// span and the span from them.
func TestAReconcilesContextCarriesALoggerNamingTheControllerAndTheObject(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   ports.Key
		attrs map[string]string
	}{
		{"namespaced", namespaced, map[string]string{
			"loam.kube.controller.name": controllerName, "k8s.namespace.name": "cache", "loam.kube.object.name": "m1",
			"replicas": "3",
		}},
		{"cluster-scoped", cluster, map[string]string{
			"loam.kube.controller.name": controllerName, "loam.kube.object.name": "default-deny",
			"replicas": "3",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, tel := newRecorder(t)
			ctx := rec.ReconcileStarted(context.Background(), tc.key)
			klog.FromContext(ctx).Info("scaled", "replicas", 3)
			klog.FromContext(ctx).V(1).Info("dropped at the default verbosity")
			logr.FromContextOrDiscard(ctx).Error(errors.New("no quota"), "scale failed")
			rec.ReconcileEnded(ctx, tc.key, ports.Report{Outcome: ports.OutcomeSuccess, Duration: time.Millisecond})

			spans := tel.SpansNamed("reconcile Memcached")
			require.Len(t, spans, 1)
			reconcile := spans[0].SpanContext

			scaled := recordsWithBody(tel, "scaled")
			require.Len(t, scaled, 1)
			require.Equal(t, tc.attrs, recordAttrs(scaled[0]))
			require.Equal(t, log.SeverityInfo, scaled[0].Severity())
			require.Equal(t, reconcile.TraceID(), scaled[0].TraceID(), "the record is in the reconcile's trace")
			require.Equal(t, reconcile.SpanID(), scaled[0].SpanID(), "the record is the reconcile span's")

			failed := recordsWithBody(tel, "scale failed")
			require.Len(t, failed, 1)
			require.Equal(t, log.SeverityError, failed[0].Severity())
			require.Equal(t, "no quota", recordAttrs(failed[0])["exception.message"])
			require.Equal(t, tc.key.Name, recordAttrs(failed[0])["loam.kube.object.name"])
			require.Equal(t, reconcile.TraceID(), failed[0].TraceID())

			require.Len(t, tel.Records(), 2, "V(1) is not recorded at verbosity 0")
		})
	}
}

// A logger of no reconcile, such as client-go's, emits its records in no
// trace.
func TestTheControllersLoggerIsInNoTrace(t *testing.T) {
	rec, tel := newRecorder(t)
	rec.Logger().Info("watching")
	records := tel.Records()
	require.Len(t, records, 1)
	require.False(t, records[0].TraceID().IsValid())
	require.Equal(t, map[string]string{"loam.kube.controller.name": controllerName}, recordAttrs(records[0]))
}
