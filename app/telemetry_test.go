package app_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
)

func TestDefaultTelemetryWritesJSONLinesToStderr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		traceID := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
		spanID := trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}
		init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			logger := s.Telemetry.LoggerProvider.Logger("github.com/example/memcached")
			var r log.Record
			r.SetSeverity(log.SeverityWarn)
			r.SetBody(attribute.StringValue("reconcile failed"))
			r.AddAttributes(
				attribute.String("k8s.namespace.name", "default"),
				attribute.Int("attempt", 3),
				attribute.Bool("requeued", true),
				attribute.Float64("ratio", 0.5),
				attribute.StringSlice("owners", []string{"a", "b"}),
			)
			spanCtx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled,
			}))
			logger.Emit(spanCtx, r)

			var plain log.Record
			plain.SetSeverity(log.SeverityInfo)
			plain.SetBody(attribute.StringValue("outside a span"))
			logger.Emit(ctx, plain)
			return nil, nil
		}
		require.Equal(t, 0, app.Run(t.Context(), init, p.option()))

		records, plainLines := p.logLines(t)
		require.Empty(t, plainLines, "every line is one JSON object")
		require.Len(t, records, 2)
		require.Equal(t, logLine{
			Time:     "2000-01-01T00:00:00Z", // synctest's clock
			Severity: "WARN",
			Scope:    "github.com/example/memcached",
			Body:     "reconcile failed",
			Attributes: map[string]any{
				"k8s.namespace.name": "default",
				"attempt":            float64(3),
				"requeued":           true,
				"ratio":              0.5,
				"owners":             []any{"a", "b"},
			},
			TraceID: traceID.String(),
			SpanID:  spanID.String(),
		}, records[0])
		require.Equal(t, "outside a span", records[1].Body)
		require.Empty(t, records[1].TraceID)
		require.Empty(t, records[1].SpanID)
	})
}

func TestDefaultTelemetry(t *testing.T) {
	var tel app.Telemetry
	init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		tel = s.Telemetry
		return nil, nil
	}
	require.Equal(t, 0, app.Run(t.Context(), init))
	requireComplete(t, tel)

	_, span := tel.TracerProvider.Tracer("x").Start(t.Context(), "span")
	require.False(t, span.IsRecording(), "traces go nowhere")
	span.End()
}

// requireComplete checks every field of tel is set, and the propagator is
// W3C trace context and baggage.
func requireComplete(t *testing.T, tel app.Telemetry) {
	t.Helper()
	require.NotNil(t, tel.TracerProvider)
	require.NotNil(t, tel.MeterProvider)
	require.NotNil(t, tel.LoggerProvider)
	require.NotNil(t, tel.Propagator)
	require.ElementsMatch(t, []string{"traceparent", "tracestate", "baggage"}, tel.Propagator.Fields())

	m, err := baggage.NewMemberRaw("fit", "scenario")
	require.NoError(t, err)
	b, err := baggage.New(m)
	require.NoError(t, err)
	carrier := map[string]string{}
	tel.Propagator.Inject(baggage.ContextWithBaggage(t.Context(), b), mapCarrier(carrier))
	require.Equal(t, "fit=scenario", carrier["baggage"])
}

type mapCarrier map[string]string

func (c mapCarrier) Get(key string) string { return c[key] }
func (c mapCarrier) Set(key, value string) { c[key] = value }
func (c mapCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

func TestWithTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(map[string]string{"SERVICE_NAME": "memcached-controller"})
		var serviceName string
		flushes := 0
		builder := func(_ context.Context, proc app.Process) (app.Telemetry, func(context.Context) error, error) {
			serviceName, _ = proc.Environment.LookupEnv("SERVICE_NAME")
			return app.Telemetry{}, func(context.Context) error { flushes++; return nil }, nil
		}
		var tel app.Telemetry
		init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			tel = s.Telemetry
			return nil, errors.New("bad")
		}
		require.Equal(t, 78, app.Run(t.Context(), init, p.option(), app.WithTelemetry(builder)))
		require.Equal(t, "memcached-controller", serviceName, "the builder reads the App's Process")
		requireComplete(t, tel)
		require.Equal(t, 1, flushes, "flushed once, at the end, after a failed Init too")
		records, plain := p.logLines(t)
		require.Empty(t, records, "the builder's nil LoggerProvider is a no-op, not the JSON default")
		require.Equal(t, []string{"init: bad"}, plain)
	})
}

func TestWithTelemetryFailures(t *testing.T) {
	tests := []struct {
		name    string
		builder app.TelemetryBuilder
		want    int
		stderr  string
	}{
		{
			name: "the builder fails",
			builder: func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
				return app.Telemetry{}, nil, errors.New("no collector endpoint")
			},
			want:   78,
			stderr: "telemetry: no collector endpoint\n",
		},
		{
			name: "the builder panics",
			builder: func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
				panic("builder bug")
			},
			want:   1,
			stderr: "telemetry: panic: builder bug\n",
		},
		{
			name: "the flush fails",
			builder: func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
				return app.Telemetry{}, func(context.Context) error { return errors.New("collector unreachable") }, nil
			},
			want:   1,
			stderr: "telemetry: shutdown: collector unreachable\n",
		},
		{
			name: "the flush hangs",
			builder: func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
				return app.Telemetry{}, func(ctx context.Context) error {
					<-ctx.Done()
					return ctx.Err()
				}, nil
			},
			want:   1,
			stderr: "telemetry: shutdown: context deadline exceeded\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestProcess(nil)
				require.Equal(t, tt.want, app.Run(t.Context(), services(), p.option(), app.WithTelemetry(tt.builder)))
				require.True(t, strings.HasPrefix(p.stderr.String(), tt.stderr), "stderr:\n%s", p.stderr.String())
			})
		})
	}
}

func TestFaults(t *testing.T) {
	t.Run("inert by default", func(t *testing.T) {
		var faults *fault.Injector
		init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			faults = s.Faults
			return nil, nil
		}
		require.Equal(t, 0, app.Run(t.Context(), init))
		require.NotNil(t, faults)
		require.False(t, faults.Enabled())
	})
	t.Run("on with WithFaults", func(t *testing.T) {
		var faults *fault.Injector
		init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			faults = s.Faults
			return nil, nil
		}
		require.Equal(t, 0, app.Run(t.Context(), init, app.WithFaults(fault.Settings{Decoder: testDecoder{}})))
		require.True(t, faults.Enabled())
	})
	t.Run("bad settings exit 78", func(t *testing.T) {
		p := newTestProcess(nil)
		called := false
		init := func(context.Context, *app.Setup) ([]app.Service, error) {
			called = true
			return nil, nil
		}
		require.Equal(t, 78, app.Run(t.Context(), init, p.option(), app.WithFaults(fault.Settings{})))
		require.False(t, called, "Init never runs")
		_, plain := p.logLines(t)
		require.Len(t, plain, 1)
		require.Contains(t, plain[0], "Decoder")
		p.record(t, "failure injection failed")
	})
}

// testDecoder owns one member and decodes no scenario.
type testDecoder struct{}

func (testDecoder) Members() []string                            { return []string{"fit"} }
func (testDecoder) Decode(baggage.Baggage) (fit.Scenario, error) { return fit.Scenario{}, nil }

// dialNetwork is a Network that records the addresses it is asked to
// dial and refuses them with errDialed.
type dialNetwork struct {
	mu     sync.Mutex
	dialed []string
}

var errDialed = errors.New("dialNetwork refuses")

func (n *dialNetwork) Dial(_ context.Context, _, address string) (net.Conn, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.dialed = append(n.dialed, address)
	return nil, errDialed
}

func (*dialNetwork) Listen(context.Context, string, string) (net.Listener, error) {
	return nil, errDialed
}

func TestWithHostTelemetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(map[string]string{"OTEL_SERVICE_NAME": "memcached-operator"})
		network := &dialNetwork{}
		var (
			serviceName string
			builderErr  error
			builderFS   app.FS
		)
		flushes := 0
		builder := func(ctx context.Context, h app.Host, proc app.Process) (app.Telemetry, func(context.Context) error, error) {
			serviceName, _ = proc.Environment.LookupEnv("OTEL_SERVICE_NAME")
			// An exporter dials its collector through the Host.
			_, builderErr = h.Dial(ctx, "tcp", "collector:4318")
			builderFS = h.FS
			return app.Telemetry{}, func(context.Context) error { flushes++; return nil }, nil
		}
		var (
			tel     app.Telemetry
			initErr error
		)
		init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			tel = s.Telemetry
			_, initErr = s.Host.Dial(ctx, "tcp", "api:443")
			return nil, nil
		}
		code := app.Run(t.Context(), init, p.option(), app.WithHost(app.Host{Network: network}), app.WithHostTelemetry(builder))
		require.Equal(t, 0, code, "stderr:\n%s", p.stderr.String())
		require.Equal(t, "memcached-operator", serviceName, "the builder reads the App's Process")
		require.ErrorIs(t, builderErr, errDialed, "the builder dials through WithHost's Network")
		require.ErrorIs(t, initErr, errDialed)
		require.Equal(t, []string{"collector:4318", "api:443"}, network.dialed, "the builder and Init share one Host")
		require.NotNil(t, builderFS, "the builder's Host is complete: a missing FS refuses, it isn't nil")
		_, err := builderFS.Open("/etc/hostname")
		require.ErrorContains(t, err, "app.WithHost")
		requireComplete(t, tel)
		require.Equal(t, 1, flushes, "flushed once, at the end")
	})
}

func TestWithHostTelemetryWithoutHost(t *testing.T) {
	var dialErr error
	builder := func(ctx context.Context, h app.Host, _ app.Process) (app.Telemetry, func(context.Context) error, error) {
		_, dialErr = h.Dial(ctx, "tcp", "127.0.0.1:4318")
		return app.Telemetry{}, nil, nil
	}
	require.Equal(t, 0, app.Run(t.Context(), services(), app.WithHostTelemetry(builder)))
	require.ErrorContains(t, dialErr, "app.WithHost", "Run's default Host reaches nothing, for the builder too")
}

func TestTelemetryOptionsLastWins(t *testing.T) {
	hostBuilt, processBuilt := 0, 0
	hostBuilder := func(context.Context, app.Host, app.Process) (app.Telemetry, func(context.Context) error, error) {
		hostBuilt++
		return app.Telemetry{}, nil, nil
	}
	processBuilder := func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
		processBuilt++
		return app.Telemetry{}, nil, nil
	}
	tests := []struct {
		name            string
		opts            []app.Option
		wantHost, wantP int
	}{
		{name: "WithHostTelemetry after WithTelemetry", opts: []app.Option{app.WithTelemetry(processBuilder), app.WithHostTelemetry(hostBuilder)}, wantHost: 1},
		{name: "WithTelemetry after WithHostTelemetry", opts: []app.Option{app.WithHostTelemetry(hostBuilder), app.WithTelemetry(processBuilder)}, wantP: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hostBuilt, processBuilt = 0, 0
			require.Equal(t, 0, app.Run(t.Context(), services(), tt.opts...))
			require.Equal(t, tt.wantHost, hostBuilt)
			require.Equal(t, tt.wantP, processBuilt)
		})
	}
}

func TestWithHostTelemetryNil(t *testing.T) {
	p := newTestProcess(nil)
	require.Equal(t, 78, app.Run(t.Context(), services(), p.option(), app.WithHostTelemetry(nil), app.WithGracePeriod(-1)))
	require.Equal(t, "app: WithGracePeriod: -1ns is negative\napp: WithHostTelemetry: the builder is nil\n", p.stderr.String(), "every bad option, in one error")
}
