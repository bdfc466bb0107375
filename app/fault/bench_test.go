package fault_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loam-dev/loam/app/fault/fit"
)

// spanContext returns a context with a recording span and a baggage member
// that isn't a scenario's, as a request's context usually has.
func spanContext(b *testing.B) context.Context {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	ctx, span := tp.Tracer("bench").Start(context.Background(), "call")
	b.Cleanup(func() { span.End() })
	return withMember(ctx, b, "tenant", "a")
}

// The hot path: every request of a controller evaluates a point, and almost
// none carries a scenario.
func BenchmarkEvalWithoutScenario(b *testing.B) {
	i := injector(b, nil)
	ctx := spanContext(b)
	b.ReportAllocs()
	for b.Loop() {
		if !i.Eval(ctx, "kube:deployments.apps:patch").IsZero() {
			b.Fatal("a fault without a scenario")
		}
	}
}

func BenchmarkInjectWithoutScenario(b *testing.B) {
	i := injector(b, nil)
	ctx := spanContext(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := i.Inject(ctx, "kube:deployments.apps:patch"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvalWithScenario(b *testing.B) {
	scenario := fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:secrets:get"},
		{Point: "kube:memcacheds.cache.example.com/status:patch", Fault: fit.Fault{Delay: 250 * time.Millisecond}},
		{Point: "kube:deployments.apps:*", Fault: fit.Fault{Abort: true}},
	}}
	b.Run("no span", func(b *testing.B) {
		i := injector(b, nil)
		ctx := withScenario(context.Background(), b, scenario)
		b.ReportAllocs()
		for b.Loop() {
			if !i.Eval(ctx, "kube:deployments.apps:patch").Abort {
				b.Fatal("no abort")
			}
		}
	})
	// As a request does: a span of its own, with the evaluation's event.
	b.Run("span per evaluation", func(b *testing.B) {
		i := injector(b, nil)
		tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder())).Tracer("bench")
		ctx := withScenario(context.Background(), b, scenario)
		b.ReportAllocs()
		for b.Loop() {
			ctx, span := tracer.Start(ctx, "call")
			if !i.Eval(ctx, "kube:deployments.apps:patch").Abort {
				b.Fatal("no abort")
			}
			span.End()
		}
	})
	b.Run("percent and count", func(b *testing.B) {
		i := injector(b, nil)
		ctx := withScenario(context.Background(), b, fit.Scenario{Rules: []fit.Rule{
			{Point: "kube:deployments.apps:*", Fault: fit.Fault{Abort: true, Percent: 50}, Count: 1 << 30},
		}})
		b.ReportAllocs()
		for b.Loop() {
			i.Eval(ctx, "kube:deployments.apps:patch")
		}
	})
}

// TestEvalWithoutScenarioAllocatesNothing holds the hot path to no
// allocation, which the benchmark only reports.
func TestEvalWithoutScenarioAllocatesNothing(t *testing.T) {
	i := injector(t, nil)
	ctx := withMember(t.Context(), t, "tenant", "a")
	allocs := testing.AllocsPerRun(100, func() {
		_ = i.Inject(ctx, "kube:deployments.apps:patch")
	})
	require.Zero(t, allocs)
}
