package fault_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const member = "acme.fault"

func codec(t testing.TB) *jsonscenario.Codec {
	t.Helper()
	c, err := jsonscenario.New(member)
	require.NoError(t, err)
	return c
}

func injector(t testing.TB, rand func() float64) *fault.Injector {
	t.Helper()
	i, err := fault.New(fault.Settings{Decoder: codec(t), Rand: rand})
	require.NoError(t, err)
	return i
}

// withScenario returns ctx carrying s, written with jsonscenario's codec.
func withScenario(ctx context.Context, t testing.TB, s fit.Scenario) context.Context {
	t.Helper()
	ctx, err := fit.ContextWithScenario(ctx, codec(t), s)
	require.NoError(t, err)
	return ctx
}

// withDelay returns ctx carrying a scenario of one rule: a delay of d at
// point "p".
func withDelay(ctx context.Context, t testing.TB, d time.Duration) context.Context {
	t.Helper()
	return withScenario(ctx, t, fit.Scenario{Rules: []fit.Rule{{Point: "p", Fault: fit.Fault{Delay: d}}}})
}

// injectTook has i inject at point "p" with ctx, failing the test on an
// error, and returns how long that took.
func injectTook(ctx context.Context, t testing.TB, i *fault.Injector) time.Duration {
	t.Helper()
	start := time.Now()
	require.NoError(t, i.Inject(ctx, "p"))
	return time.Since(start)
}

// fieldsOf returns the attributes of the log record r, each value as its
// string.
func fieldsOf(r sdklog.Record) map[string]string {
	fields := map[string]string{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		fields[string(kv.Key)] = kv.Value.String()
		return true
	})
	return fields
}

// withMember returns ctx whose baggage also holds the member key=value.
func withMember(ctx context.Context, t testing.TB, key, value string) context.Context {
	t.Helper()
	m, err := baggage.NewMemberRaw(key, value)
	require.NoError(t, err)
	b, err := baggage.FromContext(ctx).SetMember(m)
	require.NoError(t, err)
	return baggage.ContextWithBaggage(ctx, b)
}

// recorder records the spans of a test's own tracer.
type recorder struct {
	spans  *tracetest.SpanRecorder
	tracer trace.Tracer
}

func newRecorder() recorder {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	return recorder{spans: sr, tracer: tp.Tracer("test")}
}

// events runs f inside a span of its own and returns the span's events.
func (r recorder) events(ctx context.Context, f func(ctx context.Context)) []sdktrace.Event {
	ctx, span := r.tracer.Start(ctx, "call")
	f(ctx)
	span.End()
	ended := r.spans.Ended()
	return ended[len(ended)-1].Events()
}

func attrs(e sdktrace.Event) map[attribute.Key]attribute.Value {
	m := make(map[attribute.Key]attribute.Value, len(e.Attributes))
	for _, kv := range e.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestNewMistakes(t *testing.T) {
	_, err := fault.New(fault.Settings{})
	require.ErrorContains(t, err, "Settings.Decoder is nil")

	_, err = fault.New(fault.Settings{Decoder: decoder{}})
	require.ErrorContains(t, err, "owns no baggage member")

	_, err = fault.New(fault.Settings{Decoder: decoder{members: []string{"ok", "bad key", "ok", ""}}})
	require.ErrorContains(t, err, `member "bad key" is not a W3C Baggage key`)
	require.ErrorContains(t, err, `member "" is not a W3C Baggage key`)
	require.ErrorContains(t, err, `names member "ok" twice`)

	var nilCodec *jsonscenario.Codec
	_, err = fault.New(fault.Settings{Decoder: nilCodec})
	require.ErrorContains(t, err, "owns no baggage member")
}

// decoder is a fit.Decoder of fixed members and a fixed answer.
type decoder struct {
	members []string
	s       fit.Scenario
	err     error
}

func (d decoder) Members() []string                            { return d.members }
func (d decoder) Decode(baggage.Baggage) (fit.Scenario, error) { return d.s, d.err }

func TestInertAndNil(t *testing.T) {
	scenario := fit.Scenario{Rules: []fit.Rule{{Point: "*", Fault: fit.Fault{Abort: true}}}}
	r := newRecorder()
	for name, i := range map[string]*fault.Injector{"inert": fault.Inert(), "nil": nil} {
		t.Run(name, func(t *testing.T) {
			require.False(t, i.Enabled())
			require.Nil(t, i.Decoder())

			ctx := withMember(withScenario(t.Context(), t, scenario), t, "tenant", "a")
			events := r.events(ctx, func(ctx context.Context) {
				require.False(t, i.Carries(ctx))
				require.Equal(t, fit.Fault{}, i.Eval(ctx, "kube:pods:get"))
				require.NoError(t, i.Inject(ctx, "kube:pods:get"))

				b := baggage.FromContext(ctx)
				require.Equal(t, b, i.Strip(ctx, b), "nothing is stripped")
				require.Zero(t, i.Restrict(b).Len())
			})
			require.Empty(t, events, "nothing is recorded")

			b, err := i.ScenarioFromBaggage("not baggage at all;;;")
			require.NoError(t, err, "nothing is read")
			require.Zero(t, b.Len())
		})
	}
}

func TestEnabled(t *testing.T) {
	c := codec(t)
	i, err := fault.New(fault.Settings{Decoder: c})
	require.NoError(t, err)
	require.True(t, i.Enabled())
	require.Same(t, c, i.Decoder())
}

func TestEvalWithoutScenario(t *testing.T) {
	i := injector(t, nil)
	r := newRecorder()
	ctx := withMember(t.Context(), t, "tenant", "a")
	events := r.events(ctx, func(ctx context.Context) {
		require.False(t, i.Carries(ctx))
		require.Equal(t, fit.Fault{}, i.Eval(ctx, "kube:pods:get"))
	})
	require.Empty(t, events, "a context without a scenario records nothing")
}

func TestEval(t *testing.T) {
	s := fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:secrets:get"},
		{Point: "kube:secrets:*", Fault: fit.Fault{Abort: true}},
		{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Delay: 250 * time.Millisecond}},
		{Point: "kube:pods:*", Fault: fit.Fault{Status: 429, RetryAfter: time.Second, Percent: 100}},
		{Point: "kube:*", Fault: fit.Fault{Abort: true, Delay: 2 * time.Second}},
	}}
	tests := []struct {
		point string
		want  fit.Fault
		rule  int // -1 for no match
	}{
		{"kube:secrets:get", fit.Fault{}, 0},
		{"kube:secrets:list", fit.Fault{Abort: true}, 1},
		{"kube:deployments.apps:patch", fit.Fault{Delay: 250 * time.Millisecond}, 2},
		{"kube:pods:list", fit.Fault{Status: 429, RetryAfter: time.Second}, 3},
		{"kube:deployments.apps:get", fit.Fault{Abort: true, Delay: 2 * time.Second}, 4},
		{"http:example.com:443", fit.Fault{}, -1},
	}
	i := injector(t, nil)
	r := newRecorder()
	ctx := withScenario(t.Context(), t, s)
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			var got fit.Fault
			events := r.events(ctx, func(ctx context.Context) {
				require.True(t, i.Carries(ctx))
				got = i.Eval(ctx, tt.point)
			})
			require.Equal(t, tt.want, got)

			require.Len(t, events, 1)
			require.Equal(t, fault.EvaluationEvent, events[0].Name)
			a := attrs(events[0])
			require.Equal(t, tt.point, a[fault.PointKey].AsString())
			require.Equal(t, tt.rule >= 0, a[fault.MatchedKey].AsBool())
			if tt.rule >= 0 {
				require.Equal(t, int64(tt.rule), a[fault.RuleKey].AsInt64())
			} else {
				require.NotContains(t, a, fault.RuleKey)
			}
			require.Equal(t, tt.want.Abort, a[fault.AbortKey].AsBool())
			require.InDelta(t, tt.want.Delay.Seconds(), a[fault.DelayKey].AsFloat64(), 0)
			if tt.want.Status != 0 {
				require.Equal(t, int64(tt.want.Status), a[fault.StatusKey].AsInt64())
			} else {
				require.NotContains(t, a, fault.StatusKey, "only a status fault has a status")
			}
			require.NotContains(t, a, attribute.Key("error.type"))
		})
	}
}

func TestEvalScenarioOfNoRules(t *testing.T) {
	i := injector(t, nil)
	r := newRecorder()
	ctx := withScenario(t.Context(), t, fit.Scenario{})
	events := r.events(ctx, func(ctx context.Context) {
		require.Equal(t, fit.Fault{}, i.Eval(ctx, "kube:pods:get"))
	})
	require.Len(t, events, 1, "a scenario of no rules is still a scenario")
	require.False(t, attrs(events[0])[fault.MatchedKey].AsBool())
}

func TestEvalUndecodableScenario(t *testing.T) {
	i := injector(t, nil)
	r := newRecorder()
	ctx := withMember(t.Context(), t, member, `{"rules":[{"point":"*","abort":"yes please"}]}`)
	events := r.events(ctx, func(ctx context.Context) {
		require.Equal(t, fit.Fault{}, i.Eval(ctx, "kube:pods:get"), "an unreadable scenario fails safe")
		require.NoError(t, i.Inject(ctx, "kube:pods:get"))
	})
	require.Len(t, events, 2)
	a := attrs(events[0])
	require.Equal(t, fault.EvaluationEvent, events[0].Name)
	require.Equal(t, "kube:pods:get", a[fault.PointKey].AsString())
	require.False(t, a[fault.MatchedKey].AsBool())
	require.False(t, a[fault.AbortKey].AsBool())
	require.Equal(t, "github.com/loam-dev/loam/app/fault/fit.DecodeError", a["error.type"].AsString())
	require.Contains(t, a["error.message"].AsString(), `fit: baggage member "acme.fault"`)
}

func TestEvalDecodesEveryCall(t *testing.T) {
	i := injector(t, nil)
	abort := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{{Point: "p", Fault: fit.Fault{Abort: true}}}})
	delay := withDelay(abort, t, time.Second)
	require.Equal(t, fit.Fault{Abort: true}, i.Eval(abort, "p"))
	require.Equal(t, fit.Fault{Delay: time.Second}, i.Eval(delay, "p"), "a context's own scenario decides")
	require.Equal(t, fit.Fault{Abort: true}, i.Eval(abort, "p"))
}

func TestInjectAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		i := injector(t, nil)
		ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
			{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}},
		}})
		start := time.Now()
		err := i.Inject(ctx, "kube:deployments.apps:patch")
		require.Zero(t, time.Since(start), "an abort waits for nothing")

		var ie *fault.InjectedError
		require.ErrorAs(t, err, &ie)
		require.Equal(t, "kube:deployments.apps:patch", ie.Point)
		require.Equal(t, fit.Fault{Abort: true}, ie.Fault)
		require.NoError(t, ie.Cause)
		require.NoError(t, errors.Unwrap(err))
		require.Equal(t, `fault: injected abort at point "kube:deployments.apps:patch"`, err.Error())
		require.NotErrorIs(t, err, context.DeadlineExceeded)

		require.NoError(t, i.Inject(ctx, "kube:deployments.apps:get"), "another point goes ahead")
	})
}

func TestInjectDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		i := injector(t, nil)
		ctx := withDelay(t.Context(), t, 250*time.Millisecond)
		require.Equal(t, 250*time.Millisecond, injectTook(ctx, t, i))
	})
}

func TestInjectDelayCutShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		i := injector(t, nil)
		base := withDelay(t.Context(), t, time.Minute)

		ctx, cancel := context.WithTimeout(base, 3*time.Second)
		defer cancel()
		start := time.Now()
		err := i.Inject(ctx, "p")
		require.Equal(t, 3*time.Second, time.Since(start), "the delay ends with its context")
		var ie *fault.InjectedError
		require.ErrorAs(t, err, &ie)
		require.Equal(t, "p", ie.Point)
		require.Equal(t, fit.Fault{Delay: time.Minute}, ie.Fault)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, `fault: injected delay of 1m0s at point "p" cut short: context deadline exceeded`, err.Error())

		stop := errors.New("shutting down")
		ctx, cancelCause := context.WithCancelCause(base)
		time.AfterFunc(time.Second, func() { cancelCause(stop) })
		err = i.Inject(ctx, "p")
		require.ErrorIs(t, err, stop, "the injected error wraps the context's cause")
		require.ErrorAs(t, err, &ie)

		done, cancel := context.WithCancel(base)
		cancel()
		start = time.Now()
		err = i.Inject(done, "p")
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, time.Since(start), "a done context cuts the delay short at once")
	})
}

func TestInjectDelayThenAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		i := injector(t, nil)
		f := fit.Fault{Abort: true, Delay: 5 * time.Second}
		ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{{Point: "p", Fault: f}}})
		start := time.Now()
		err := i.Inject(ctx, "p")
		require.Equal(t, 5*time.Second, time.Since(start), "the delay comes first")
		var ie *fault.InjectedError
		require.ErrorAs(t, err, &ie)
		require.Equal(t, f, ie.Fault)
		require.NoError(t, ie.Cause)
		require.Equal(t, `fault: injected abort, after a delay of 5s, at point "p"`, err.Error())
	})
}

func TestStrip(t *testing.T) {
	i := injector(t, nil)
	r := newRecorder()
	ctx := withMember(t.Context(), t, "tenant", "a")
	ctx = withScenario(ctx, t, fit.Scenario{Rules: []fit.Rule{{Point: "*", Fault: fit.Fault{Abort: true}}}})
	ctx = withMember(ctx, t, "other.fault", "kept")

	propagator := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	header := http.Header{}
	var stripped baggage.Baggage
	events := r.events(ctx, func(ctx context.Context) {
		stripped = i.Strip(ctx, baggage.FromContext(ctx))
		propagator.Inject(baggage.ContextWithBaggage(ctx, stripped), propagation.HeaderCarrier(header))
	})

	require.Equal(t, 2, stripped.Len())
	require.Empty(t, stripped.Member(member).Key(), "the Decoder's member is gone")
	require.Equal(t, "a", stripped.Member("tenant").Value())
	require.Equal(t, "kept", stripped.Member("other.fault").Value())
	require.NotEmpty(t, header.Get("traceparent"), "the trace context goes on")
	require.NotContains(t, header.Get("baggage"), member)
	require.Contains(t, header.Get("baggage"), "tenant=a")

	require.Len(t, events, 1)
	require.Equal(t, fault.StripEvent, events[0].Name)
	require.Empty(t, events[0].Attributes, "a strip has no attributes")

	// Nothing to strip: nothing recorded, the same baggage back.
	events = r.events(ctx, func(ctx context.Context) {
		require.Equal(t, stripped, i.Strip(ctx, stripped))
		require.Equal(t, baggage.Baggage{}, i.Strip(ctx, baggage.Baggage{}))
	})
	require.Empty(t, events)
}

func TestStripContext(t *testing.T) {
	i := injector(t, nil)
	r := newRecorder()
	plain := withMember(t.Context(), t, "tenant", "a")
	ctx := withScenario(plain, t, fit.Scenario{})
	var stripped context.Context
	events := r.events(ctx, func(ctx context.Context) {
		stripped = i.StripContext(ctx)
		require.False(t, i.Carries(stripped))
		require.Equal(t, "a", baggage.FromContext(stripped).Member("tenant").Value())
		require.Equal(t, trace.SpanFromContext(ctx), trace.SpanFromContext(stripped), "the span stays")
	})
	require.Len(t, events, 1)
	require.Equal(t, fault.StripEvent, events[0].Name)

	events = r.events(plain, func(ctx context.Context) {
		require.True(t, i.StripContext(ctx) == ctx, "nothing to strip: the same context")
		carrying := withScenario(ctx, t, fit.Scenario{})
		require.True(t, fault.Inert().StripContext(carrying) == carrying, "an inert Injector strips nothing")
	})
	require.Empty(t, events)
}

func TestRestrict(t *testing.T) {
	i := injector(t, nil)
	ctx := withMember(t.Context(), t, "tenant", "a")
	ctx = withScenario(ctx, t, fit.Scenario{})
	r := i.Restrict(baggage.FromContext(ctx))
	require.Equal(t, 1, r.Len())
	require.Equal(t, `{"rules":[]}`, r.Member(member).Value())

	require.Zero(t, i.Restrict(baggage.FromContext(withMember(t.Context(), t, "tenant", "a"))).Len())
}

func TestScenarioFromBaggage(t *testing.T) {
	i := injector(t, nil)
	const scenario = `acme.fault={%22rules%22:[{%22point%22:%22kube:deployments.apps:patch%22%2C%22abort%22:true}]}`

	t.Run("only the Decoder's members", func(t *testing.T) {
		b, err := i.ScenarioFromBaggage("tenant=a," + scenario + ";prop=1,user=bob")
		require.NoError(t, err)
		require.Equal(t, 1, b.Len())
		require.Equal(t, `{"rules":[{"point":"kube:deployments.apps:patch","abort":true}]}`, b.Member(member).Value())

		// What joins a context is evaluated as a scenario there.
		ctx := baggage.ContextWithBaggage(t.Context(), b)
		require.Equal(t, fit.Fault{Abort: true}, i.Eval(ctx, "kube:deployments.apps:patch"))
	})

	t.Run("none present", func(t *testing.T) {
		for _, value := range []string{"", "tenant=a", "other.fault={%22rules%22:[]}"} {
			b, err := i.ScenarioFromBaggage(value)
			require.NoError(t, err, value)
			require.Zero(t, b.Len(), value)
		}
	})

	t.Run("not baggage", func(t *testing.T) {
		for _, value := range []string{
			`{"rules":[]}`,
			"acme.fault",
			"acme.fault=%ZZ",
			"tenant=a b," + scenario,
			scenario + ",=x",
		} {
			b, err := i.ScenarioFromBaggage(value)
			require.Zero(t, b.Len(), value)
			var de *fit.DecodeError
			require.ErrorAs(t, err, &de, value)
			require.Empty(t, de.Member, value)
			require.Equal(t, "github.com/loam-dev/loam/app/fault/fit.DecodeError", fault.ErrorType(err))
		}
	})

	t.Run("a scenario the Decoder can't read", func(t *testing.T) {
		b, err := i.ScenarioFromBaggage(`acme.fault={%22rules%22:[{%22point%22:%22%22}]}`)
		require.Zero(t, b.Len())
		var de *fit.DecodeError
		require.ErrorAs(t, err, &de)
		require.Equal(t, member, de.Member)
		require.ErrorContains(t, err, "point is empty")
	})

	t.Run("a codec's error that isn't a DecodeError", func(t *testing.T) {
		plain := errors.New("expired")
		i, err := fault.New(fault.Settings{Decoder: decoder{members: []string{"x"}, err: plain}})
		require.NoError(t, err)
		_, err = i.ScenarioFromBaggage("x=1")
		var de *fit.DecodeError
		require.ErrorAs(t, err, &de)
		require.ErrorIs(t, err, plain)
	})
}

// sequence returns a Rand that returns values in turn, and how many times
// it has been called.
func sequence(values ...float64) (func() float64, *int) {
	n := 0
	return func() float64 {
		v := values[n%len(values)]
		n++
		return v
	}, &n
}

func TestPercent(t *testing.T) {
	rand, calls := sequence(0.10, 0.49, 0.50, 0.99)
	i := injector(t, rand)
	ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
		{Point: "half", Fault: fit.Fault{Abort: true, Percent: 50}},
		{Point: "always", Fault: fit.Fault{Abort: true, Percent: 100}},
		{Point: "zero", Fault: fit.Fault{Abort: true}},
	}})

	var got []bool
	for range 4 {
		got = append(got, i.Eval(ctx, "half").Abort)
	}
	require.Equal(t, []bool{true, true, false, false}, got, "a roll below Percent/100 injects")
	require.Equal(t, 4, *calls)

	require.Equal(t, fit.Fault{Abort: true}, i.Eval(ctx, "always"))
	require.Equal(t, fit.Fault{Abort: true}, i.Eval(ctx, "zero"))
	require.Equal(t, 4, *calls, "0 and 100 mean every time, without a roll")
}

func TestPercentSparedEvent(t *testing.T) {
	rand, _ := sequence(0.75)
	i := injector(t, rand)
	ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
		{Point: "p", Fault: fit.Fault{Abort: true, Percent: 50}},
		{Point: "*", Fault: fit.Fault{Abort: true}},
	}})
	r := newRecorder()
	events := r.events(ctx, func(ctx context.Context) {
		require.Equal(t, fit.Fault{}, i.Eval(ctx, "p"), "a spared evaluation meets the zero Fault, not a later rule's")
	})
	require.Len(t, events, 1)
	a := attrs(events[0])
	require.True(t, a[fault.MatchedKey].AsBool())
	require.Equal(t, int64(0), a[fault.RuleKey].AsInt64())
	require.False(t, a[fault.AbortKey].AsBool())
}

func TestPercentDefaultRand(t *testing.T) {
	i := injector(t, nil)
	ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
		{Point: "p", Fault: fit.Fault{Abort: true, Percent: 50}},
	}})
	seen := map[bool]int{}
	for range 1000 {
		seen[i.Eval(ctx, "p").Abort]++
	}
	// Each outcome missing from 1000 fair draws has a chance of 2^-1000.
	require.Positive(t, seen[true])
	require.Positive(t, seen[false])
}

func TestCount(t *testing.T) {
	i := injector(t, nil)
	s := fit.Scenario{Rules: []fit.Rule{
		{Point: "p", Fault: fit.Fault{Abort: true}, Count: 2},
		{Point: "p", Fault: fit.Fault{Delay: time.Second}},
	}}
	ctx := withScenario(t.Context(), t, s)

	r := newRecorder()
	var got []fit.Fault
	events := r.events(ctx, func(ctx context.Context) {
		for range 4 {
			got = append(got, i.Eval(ctx, "p"))
		}
	})
	require.Equal(t, []fit.Fault{{Abort: true}, {Abort: true}, {Delay: time.Second}, {Delay: time.Second}}, got,
		"a spent rule stops matching, and the next rule decides")
	require.Equal(t, int64(0), attrs(events[1])[fault.RuleKey].AsInt64())
	require.Equal(t, int64(1), attrs(events[2])[fault.RuleKey].AsInt64())

	// Another context with the same scenario value shares the count, as
	// every reconcile of one annotated object does.
	again := withScenario(withMember(t.Context(), t, "tenant", "b"), t, s)
	require.Equal(t, fit.Fault{Delay: time.Second}, i.Eval(again, "p"))

	// A different value counts afresh.
	other := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
		{Point: "p", Fault: fit.Fault{Abort: true}, Count: 1},
	}})
	require.Equal(t, fit.Fault{Abort: true}, i.Eval(other, "p"))
	require.Equal(t, fit.Fault{}, i.Eval(other, "p"))

	// So does another Injector.
	require.Equal(t, fit.Fault{Abort: true}, injector(t, nil).Eval(ctx, "p"))

	// A point the rule doesn't match doesn't count.
	prefix := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:secrets:*", Fault: fit.Fault{Abort: true}, Count: 1},
	}})
	require.Equal(t, fit.Fault{}, i.Eval(prefix, "kube:pods:get"))
	require.Equal(t, fit.Fault{Abort: true}, i.Eval(prefix, "kube:secrets:get"))
	require.Equal(t, fit.Fault{}, i.Eval(prefix, "kube:secrets:list"), "the count is the rule's, across its points")
}

func TestCountWithPercent(t *testing.T) {
	rand, _ := sequence(0.9, 0.1, 0.9, 0.1, 0.1)
	i := injector(t, rand)
	ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
		{Point: "p", Fault: fit.Fault{Abort: true, Percent: 50}, Count: 2},
	}})
	var got []bool
	for range 5 {
		got = append(got, i.Eval(ctx, "p").Abort)
	}
	require.Equal(t, []bool{false, true, false, true, false}, got, "spared evaluations aren't counted")
}

func TestCountConcurrent(t *testing.T) {
	i := injector(t, nil)
	ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
		{Point: "p", Fault: fit.Fault{Abort: true}, Count: 10},
	}})
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		aborts int
	)
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if i.Eval(ctx, "p").Abort {
					mu.Lock()
					aborts++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 10, aborts)
}

func TestErrorType(t *testing.T) {
	require.Equal(t, "github.com/loam-dev/loam/app/fault.InjectedError", fault.ErrorType(&fault.InjectedError{}))
	require.Equal(t, "github.com/loam-dev/loam/app/fault/fit.DecodeError", fault.ErrorType(&fit.DecodeError{}))
	require.Equal(t, "errors.errorString", fault.ErrorType(errors.New("x")))
	require.Empty(t, fault.ErrorType(nil))
}

// TestEvalExpiredScenario: a scenario aborts until its end; at and after
// it, every point meets the zero Fault, Inject fails nothing, and each
// evaluation records a strip event saying the scenario expired, in place
// of an evaluation event. Ends reads the end.
func TestEvalExpiredScenario(t *testing.T) {
	ends := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	now := ends.Add(-time.Second)
	i, err := fault.New(fault.Settings{Decoder: codec(t), Now: func() time.Time { return now }})
	require.NoError(t, err)
	r := newRecorder()
	ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{{Point: "*", Fault: fit.Fault{Abort: true}}}, Ends: ends})

	got, ok := i.Ends(baggage.FromContext(ctx))
	require.True(t, ok)
	require.Equal(t, ends, got)
	events := r.events(ctx, func(ctx context.Context) {
		require.Equal(t, fit.Fault{Abort: true}, i.Eval(ctx, "kube:pods:get"), "before its end")
	})
	require.Equal(t, fault.EvaluationEvent, events[0].Name)

	for _, at := range []time.Time{ends, ends.Add(time.Hour)} {
		now = at
		events := r.events(ctx, func(ctx context.Context) {
			require.Equal(t, fit.Fault{}, i.Eval(ctx, "kube:pods:get"))
			require.NoError(t, i.Inject(ctx, "kube:pods:get"))
		})
		require.Len(t, events, 2, at)
		for _, e := range events {
			require.Equal(t, fault.StripEvent, e.Name)
			a := attrs(e)
			require.True(t, a[fault.ExpiredKey].AsBool())
			require.Equal(t, "2026-12-04T05:00:00Z", a[fault.EndsKey].AsString())
			require.Equal(t, "kube:pods:get", a[fault.PointKey].AsString())
		}
	}

	_, ok = i.Ends(baggage.FromContext(withScenario(t.Context(), t, fit.Scenario{})))
	require.False(t, ok, "no end")
	_, ok = i.Ends(baggage.Baggage{})
	require.False(t, ok, "no scenario")
	_, ok = fault.Inert().Ends(baggage.FromContext(ctx))
	require.False(t, ok, "inert")
}

// TestRequireEnd: with RequireEnd, a scenario without an end fails
// nothing and records why, and the Kubernetes controller's reading of an
// annotation refuses it as one that doesn't decode; a scenario with an
// end is carried out as ever.
func TestRequireEnd(t *testing.T) {
	i, err := fault.New(fault.Settings{Decoder: codec(t), RequireEnd: true})
	require.NoError(t, err)
	rules := []fit.Rule{{Point: "*", Fault: fit.Fault{Abort: true}}}
	r := newRecorder()

	endless := withScenario(t.Context(), t, fit.Scenario{Rules: rules})
	events := r.events(endless, func(ctx context.Context) {
		require.Equal(t, fit.Fault{}, i.Eval(ctx, "kube:pods:get"))
	})
	require.Len(t, events, 1)
	a := attrs(events[0])
	require.Equal(t, "github.com/loam-dev/loam/app/fault/fit.DecodeError", a["error.type"].AsString())
	require.Contains(t, a["error.message"].AsString(), fault.ErrNoEnd.Error())
	_, err = i.ScenarioFromBaggage(baggage.FromContext(endless).String())
	require.ErrorIs(t, err, fault.ErrNoEnd)

	timed := withScenario(t.Context(), t, fit.Scenario{Rules: rules, Ends: time.Now().Add(time.Hour)})
	require.Equal(t, fit.Fault{Abort: true}, i.Eval(timed, "kube:pods:get"))
	_, err = i.ScenarioFromBaggage(baggage.FromContext(timed).String())
	require.NoError(t, err)
}

// TestExperimentID: a scenario's ID is on every evaluation and strip event,
// in every error it injects, and on the record each injected fault leaves
// in the Settings' Logger, with its point and what it met; a point that
// meets nothing leaves no record.
// TestInjectStatus: a status fails the call, after its delay, with an
// *InjectedError whose Fault holds the status and its Retry-After for the
// caller that answers for its dependency, and whose message names the
// status; its record carries the status.
func TestInjectStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel := apptest.NewTelemetry()
		i, err := fault.New(fault.Settings{Decoder: codec(t), Logger: tel.LoggerProvider.Logger("test")})
		require.NoError(t, err)
		ctx := withScenario(t.Context(), t, fit.Scenario{Rules: []fit.Rule{
			{Point: "a", Fault: fit.Fault{Status: 429, RetryAfter: 2 * time.Second}},
			{Point: "b", Fault: fit.Fault{Status: 503, Delay: 3 * time.Second}},
		}})

		start := time.Now()
		err = i.Inject(ctx, "a")
		require.Zero(t, time.Since(start), "a status without a delay waits for nothing")
		var ie *fault.InjectedError
		require.ErrorAs(t, err, &ie)
		require.Equal(t, fit.Fault{Status: 429, RetryAfter: 2 * time.Second}, ie.Fault)
		require.NoError(t, ie.Cause)
		require.Equal(t, `fault: injected status 429 at point "a"`, err.Error())

		err = i.Inject(ctx, "b")
		require.Equal(t, 3*time.Second, time.Since(start), "the delay comes first")
		require.EqualError(t, err, `fault: injected status 503, after a delay of 3s, at point "b"`)

		records := tel.Records()
		require.Len(t, records, 2)
		got := fieldsOf(records[0])
		require.Equal(t, map[string]string{
			"loam.fit.point": "a", "loam.fit.abort": "false", "loam.fit.delay": "0", "loam.fit.status": "429",
		}, got)
	})
}

func TestExperimentID(t *testing.T) {
	tel := apptest.NewTelemetry()
	i, err := fault.New(fault.Settings{Decoder: codec(t), Logger: tel.LoggerProvider.Logger("test")})
	require.NoError(t, err)
	r := newRecorder()
	ctx := withScenario(t.Context(), t, fit.Scenario{ID: "game-day-7", Rules: []fit.Rule{
		{Point: "kube:secrets:get"},
		{Point: "kube:*", Fault: fit.Fault{Abort: true}},
	}})

	var injected error
	events := r.events(ctx, func(ctx context.Context) {
		injected = i.Inject(ctx, "kube:pods:get")
		require.NoError(t, i.Inject(ctx, "kube:secrets:get"))
		i.Strip(ctx, baggage.FromContext(ctx))
	})
	require.EqualError(t, injected, `fault: injected abort at point "kube:pods:get" (experiment "game-day-7")`)
	var ie *fault.InjectedError
	require.ErrorAs(t, injected, &ie)
	require.Equal(t, "game-day-7", ie.Experiment)

	require.Len(t, events, 3)
	for _, e := range events {
		require.Equal(t, "game-day-7", attrs(e)[fault.ExperimentKey].AsString(), e.Name)
	}
	require.Equal(t, fault.StripEvent, events[2].Name)

	records := tel.Records()
	require.Len(t, records, 1, "one record, of the abort; none of the point that met nothing")
	require.Equal(t, fault.InjectedBody, records[0].Body().AsString())
	got := fieldsOf(records[0])
	require.Equal(t, map[string]string{
		"loam.fit.point": "kube:pods:get", "loam.fit.abort": "true", "loam.fit.delay": "0", "loam.fit.experiment": "game-day-7",
	}, got)
}
