package explore

import (
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/kubetest/internal/generate"
)

func TestReconciles(t *testing.T) {
	at := time.Unix(1000, 0)
	spans := []tracetest.SpanStub{
		{Name: "reconcile Memcached", StartTime: at, Attributes: []attribute.KeyValue{
			telemetry.NamespaceKey.String("ns"), telemetry.ObjectNameKey.String("a"), telemetry.OutcomeKey.String("success")}},
		{Name: "GET", StartTime: at, Attributes: []attribute.KeyValue{telemetry.ObjectNameKey.String("a")}},
		{Name: "reconcile Node", StartTime: at.Add(time.Second), Attributes: []attribute.KeyValue{
			telemetry.ObjectNameKey.String("n"), telemetry.OutcomeKey.String("panic")}},
		{Name: "reconcile Memcached", StartTime: at, Attributes: []attribute.KeyValue{telemetry.ObjectNameKey.String("unended")}},
	}
	require.Equal(t, []reconcile{
		{object: "Memcached ns/a", start: at, succeeded: true},
		{object: "Node n", start: at.Add(time.Second)},
	}, reconciles(spans), "a reconcile's span has its outcome; a request's has none")
}

func TestUnderWay(t *testing.T) {
	at := time.Unix(1000, 0)
	child := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})
	running := []tracetest.SpanStub{
		{Name: "reconcile Database", StartTime: at, Attributes: []attribute.KeyValue{
			telemetry.NamespaceKey.String("ns"), telemetry.ObjectNameKey.String("b")}},
		{Name: "GET", StartTime: at, Attributes: []attribute.KeyValue{telemetry.ObjectNameKey.String("b")}},
		{Name: "reconcile Database", StartTime: at, Parent: child, Attributes: []attribute.KeyValue{telemetry.ObjectNameKey.String("not a root")}},
		{Name: "reconcile Node", StartTime: at, Attributes: []attribute.KeyValue{telemetry.ObjectNameKey.String("n")}},
	}
	require.Equal(t, []string{"Database ns/b", "Node n"}, underWay(running), "a reconcile's root span, whatever its outcome, while it runs")
	require.Empty(t, underWay(nil))
}

func TestLoops(t *testing.T) {
	from := time.Unix(1000, 0)
	to := from.Add(time.Second)
	every := func(object string, n int, d time.Duration) []reconcile {
		out := make([]reconcile, n)
		for i := range out {
			out[i] = reconcile{object: object, start: from.Add(time.Duration(i) * d)}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		rs   []reconcile
		want []string
	}{
		{"none", nil, nil},
		{"a poll a second", every("M ns/a", 1, 0), nil},
		{"at the rate", every("M ns/a", 10, 100*time.Millisecond), nil},
		{"above the rate", every("M ns/a", 11, 90*time.Millisecond), []string{"M ns/a, reconciled 11 times in 1s (11 a second)"}},
		{"a loop, every 5 ms", every("M ns/a", 200, 5*time.Millisecond), []string{"M ns/a, reconciled 200 times in 1s (200 a second)"}},
		{"before and after the window aren't counted", append(every("M ns/a", 100, -5*time.Millisecond)[1:], every("M ns/a", 100, 5*time.Millisecond+time.Second)[1:]...), nil},
		{"each object on its own, in order", append(every("M ns/b", 50, time.Millisecond), append(every("M ns/a", 20, time.Millisecond), every("M ns/c", 5, time.Millisecond)...)...),
			[]string{"M ns/a, reconciled 20 times in 1s (20 a second)", "M ns/b, reconciled 50 times in 1s (50 a second)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, loops(tc.rs, from, to, 10))
		})
	}
	// In a short window, a few reconciles make a high rate of nothing.
	require.Empty(t, loops(every("M ns/a", 2, time.Millisecond), from, from.Add(10*time.Millisecond), 10))
	require.Len(t, loops(every("M ns/a", 3, time.Millisecond), from, from.Add(10*time.Millisecond), 10), 1)
}

func TestTally_empty(t *testing.T) {
	create := Step{Step: generate.Step{Op: generate.Create, Name: "x", Spec: map[string]any{"size": int64(1)}}}
	for _, tc := range []struct {
		name  string
		steps []made
		ok    int
		want  string
	}{
		{"nothing refused", []made{{}, {}, {wasted: true}}, 3, ""},
		{"half refused", []made{{}, {refused: "no"}}, 1, ""},
		{"most refused", []made{{}, {refused: "no"}, {refused: "never"}, {wasted: true}}, 1,
			`2 of 4 steps refused by the API server, 1 more wasted (the first refused: create x {"size":1}: no)`},
		{"no reconcile succeeded", []made{{}}, 0, "no reconcile succeeded, of 5"},
		{"both", []made{{refused: "no"}, {wasted: true}}, 0,
			`1 of 2 steps refused by the API server, 1 more wasted (the first refused: create x {"size":1}: no); and no reconcile succeeded, of 5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c tally
			for _, m := range tc.steps {
				c.step(create, m)
			}
			c.reconciles, c.succeeded = 5, tc.ok
			require.Equal(t, tc.want, c.empty())
		})
	}
}

// TestTally_add_sums_every_count: a count added to the tally but not to
// add is lost whenever replays run side by side (kept.go), as the
// kubelet faults' and the down steps' were once.
func TestTally_add_sums_every_count(t *testing.T) {
	var one tally
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		// The fields are unexported: set them through their address.
		f := reflect.NewAt(v.Field(i).Type(), unsafe.Pointer(v.Field(i).UnsafeAddr())).Elem()
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(1)
		case reflect.String:
			f.SetString("first")
		default:
			t.Fatalf("tally.%s: a %s; say here how add combines it", v.Type().Field(i).Name, f.Kind())
		}
	}
	var sum tally
	sum.add(one)
	sum.add(one)
	s := reflect.ValueOf(sum)
	for i := range s.NumField() {
		name := s.Type().Field(i).Name
		switch f := s.Field(i); f.Kind() {
		case reflect.Int:
			require.EqualValues(t, 2, f.Int(), "tally.add doesn't add tally.%s", name)
		case reflect.String:
			require.Equal(t, "first", f.String(), "tally.add doesn't keep the first tally.%s", name)
		}
	}
}
