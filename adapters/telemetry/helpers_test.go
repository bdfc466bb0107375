package telemetry_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	controllerName = "memcached"
	kind           = "Memcached"
)

// newRecorder returns a Recorder reporting to a fresh in-memory Telemetry.
func newRecorder(t testing.TB) (*telemetry.Recorder, *apptest.Telemetry) {
	t.Helper()
	tel := apptest.NewTelemetry()
	rec, err := telemetry.NewRecorder(telemetry.Config{
		Name:           controllerName,
		Kind:           kind,
		TracerProvider: tel.TracerProvider,
		MeterProvider:  tel.MeterProvider,
		LoggerProvider: tel.LoggerProvider,
	})
	require.NoError(t, err)
	return rec, tel
}

// attrs returns kvs as a map of each key to its value's string form.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// recordAttrs returns r's attributes as attrs does.
func recordAttrs(r sdklog.Record) map[string]string {
	var kvs []attribute.KeyValue
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		kvs = append(kvs, kv)
		return true
	})
	return attrs(kvs)
}

// recordsWithBody returns tel's records whose body is body.
func recordsWithBody(tel *apptest.Telemetry, body string) []sdklog.Record {
	var found []sdklog.Record
	for _, r := range tel.Records() {
		if r.Body().AsString() == body {
			found = append(found, r)
		}
	}
	return found
}

// metric collects the metric named name, failing the test when it wasn't
// recorded, and checks it came from the kube scope.
func metric(t *testing.T, tel *apptest.Telemetry, name string) metricdata.Metrics {
	t.Helper()
	rm, err := tel.Metrics(context.Background())
	require.NoError(t, err)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				require.Equal(t, ports.ScopeName, sm.Scope.Name, "the scope of %s", name)
				return m
			}
		}
	}
	require.FailNow(t, "not recorded", "metric %s", name)
	return metricdata.Metrics{}
}

// notRecorded asserts no data point of the metric named name was
// recorded.
func notRecorded(t *testing.T, tel *apptest.Telemetry, name string) {
	t.Helper()
	_, err := tel.Metric(context.Background(), name)
	require.ErrorIs(t, err, apptest.ErrNotRecorded)
}

// gaugeValue returns the one data point's value of the gauge named name,
// and checks its attributes are the controller's name alone.
func gaugeValue[N int64 | float64](t *testing.T, tel *apptest.Telemetry, name string) N {
	t.Helper()
	m := metric(t, tel, name)
	g, ok := m.Data.(metricdata.Gauge[N])
	require.True(t, ok, "%s is a %T, not a gauge of %T", name, m.Data, *new(N))
	require.Len(t, g.DataPoints, 1, name)
	require.Equal(t, map[string]string{"loam.kube.controller.name": controllerName}, attrs(g.DataPoints[0].Attributes.ToSlice()), name)
	return g.DataPoints[0].Value
}

// counterValue returns the one data point's value of the monotonic sum
// named name, and checks its attributes as gaugeValue does.
func counterValue(t *testing.T, tel *apptest.Telemetry, name string) int64 {
	t.Helper()
	m := metric(t, tel, name)
	s, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is a %T, not a sum of int64", name, m.Data)
	require.True(t, s.IsMonotonic, name)
	require.Len(t, s.DataPoints, 1, name)
	require.Equal(t, map[string]string{"loam.kube.controller.name": controllerName}, attrs(s.DataPoints[0].Attributes.ToSlice()), name)
	return s.DataPoints[0].Value
}

// histogramPoint is what a test checks of one histogram data point.
type histogramPoint struct {
	Attributes map[string]string
	Count      uint64
	Sum        float64
}

func (p histogramPoint) String() string {
	return fmt.Sprintf("%v count=%d sum=%g", p.Attributes, p.Count, p.Sum)
}

// histogram returns the data points of the histogram named name, checking
// every one has the duration boundaries. Sums are rounded to the
// nanosecond, so a test can compare them with a sum of decimal seconds.
func histogram(t *testing.T, tel *apptest.Telemetry, name string) []histogramPoint {
	t.Helper()
	m := metric(t, tel, name)
	require.Equal(t, "s", m.Unit, name)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T, not a histogram of float64", name, m.Data)
	points := make([]histogramPoint, 0, len(h.DataPoints))
	for _, dp := range h.DataPoints {
		require.Equal(t, telemetry.DurationBoundaries(), dp.Bounds, name)
		points = append(points, histogramPoint{Attributes: attrs(dp.Attributes.ToSlice()), Count: dp.Count, Sum: math.Round(dp.Sum*1e9) / 1e9})
	}
	return points
}
