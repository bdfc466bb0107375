package apptest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

// greeter is the App the tests run: it reads GREETING from its Process,
// writes it to stdout every ten seconds, counting each on a metric, until
// it is stopped.
func greeter(_ context.Context, s *app.Setup) ([]app.Service, error) {
	greeting, ok := s.Process.Environment.LookupEnv("GREETING")
	if !ok || greeting == "" {
		return nil, errors.New("config GREETING: not found")
	}
	greetings, err := s.Telemetry.MeterProvider.Meter("greeter").Int64Counter("greetings")
	if err != nil {
		return nil, err
	}
	return []app.Service{&greetService{out: s.Process.Stdout, greeting: greeting, greetings: greetings}}, nil
}

type greetService struct {
	out       io.Writer
	greeting  string
	greetings metric.Int64Counter
}

func (g *greetService) Serve(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := fmt.Fprintln(g.out, g.greeting); err != nil {
				return err
			}
			g.greetings.Add(ctx, 1)
		}
	}
}

func (*greetService) Shutdown(context.Context) error { return nil }

func TestStart_runs_an_App_on_the_test_s_Process_and_clock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := apptest.Start(t, greeter, apptest.WithEnv(map[string]string{"GREETING": "hello"}), apptest.WithArgs("--verbose"))
		s := a.Setup()
		require.Equal(t, []string{"--verbose"}, s.Process.Args)

		time.Sleep(time.Minute) // instantly, on the bubble's clock
		synctest.Wait()
		require.Equal(t, strings.Repeat("hello\n", 6), a.Stdout())
		m, err := a.Telemetry().Metric(t.Context(), "greetings")
		require.NoError(t, err)
		sum, ok := m.Data.(metricdata.Sum[int64])
		require.True(t, ok, "a counter is a sum, not %T", m.Data)
		require.Equal(t, int64(6), sum.DataPoints[0].Value)

		select {
		case <-a.Done():
			t.Fatalf("the App exited with %d before it was signalled", a.Wait())
		default:
		}
		a.Signal(syscall.SIGTERM)
		require.Equal(t, 0, a.Wait())
		a.Signal(syscall.SIGTERM) // does nothing once the App has exited
		require.Equal(t, 0, a.Stop())
	})
}

func TestStart_exits_78_without_a_variable_the_real_environment_has(t *testing.T) {
	t.Setenv("GREETING", "from the real environment")
	synctest.Test(t, func(t *testing.T) {
		a := apptest.Start(t, greeter)
		require.Equal(t, 78, a.Wait())
		require.Contains(t, a.Stderr(), "config GREETING: not found")
		require.Empty(t, a.Stdout())
		require.NotEmpty(t, a.Telemetry().Records(), "the failure is logged too")
		_, ok := a.Setup().Process.Environment.LookupEnv("GREETING")
		require.False(t, ok)
	})
}

func TestStart_stops_the_App_when_the_test_ends(t *testing.T) {
	var a *apptest.App
	t.Run("runs an App and leaves it running", func(t *testing.T) {
		a = apptest.Start(t, greeter, apptest.WithEnv(map[string]string{"GREETING": "hi"}))
		a.Setup()
	})
	select {
	case <-a.Done():
	default:
		t.Fatal("the App still runs after its test ended")
	}
	require.Equal(t, 0, a.Wait())
}

func TestStart_on_a_Host_the_test_shares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		// The App answers each connection with the file its Init read.
		echo := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			b, err := readFile(s.Host.FS, "greeting.txt")
			if err != nil {
				return nil, err
			}
			l, err := s.Host.Listen(ctx, "tcp", ":8080")
			if err != nil {
				return nil, err
			}
			return []app.Service{&answerService{l: l, answer: b}}, nil
		}
		a := apptest.Start(t, echo,
			apptest.WithHost(h),
			apptest.WithFiles(map[string][]byte{"greeting.txt": []byte("hello from a file\n")}),
		)
		require.Same(t, h, a.Host())
		a.Setup()

		c, err := h.Dial(t.Context(), "tcp", "localhost:8080")
		require.NoError(t, err)
		defer c.Close()
		line, err := bufio.NewReader(c).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "hello from a file\n", line)

		require.Equal(t, 0, a.Stop())
		_, err = h.Dial(t.Context(), "tcp", "localhost:8080")
		require.ErrorIs(t, err, syscall.ECONNREFUSED, "the App closed its listener")
	})
}

// answerService writes answer to each connection it accepts on l.
type answerService struct {
	l      net.Listener
	answer []byte
}

func (s *answerService) Serve(context.Context) error {
	for {
		c, err := s.l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		_, err = c.Write(s.answer)
		if err := errors.Join(err, c.Close()); err != nil {
			return err
		}
	}
}

func (s *answerService) Shutdown(context.Context) error { return s.l.Close() }

func TestStart_passes_app_options_on(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		called := false
		init := func(context.Context, *app.Setup) ([]app.Service, error) {
			called = true
			return nil, nil
		}
		var a *apptest.App
		msg := fatalOf(t, func(tb testing.TB) {
			a = apptest.Start(tb, init, apptest.WithAppOptions(app.WithGracePeriod(-time.Second)))
			a.Setup()
		})
		require.Equal(t, 78, a.Wait(), "a negative grace period is a bad option")
		require.False(t, called)
		require.Contains(t, a.Stderr(), "WithGracePeriod")
		require.Contains(t, msg, "apptest: the App exited with 78 before calling its Init")
	})
}

func TestStart_an_App_without_Services_exits_0(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := apptest.Start(t, func(context.Context, *app.Setup) ([]app.Service, error) { return nil, nil })
		require.Equal(t, 0, a.Wait())
		require.NotNil(t, a.Setup())
	})
}

// failedTB is a testing.TB that has failed: it keeps what is logged, and
// the cleanups registered, for the test to run.
type failedTB struct {
	testing.TB
	logged   []string
	cleanups []func()
}

func (f *failedTB) Helper()          {}
func (f *failedTB) Failed() bool     { return true }
func (f *failedTB) Cleanup(c func()) { f.cleanups = append(f.cleanups, c) }
func (f *failedTB) Logf(format string, args ...any) {
	f.logged = append(f.logged, fmt.Sprintf(format, args...))
}

func TestStart_logs_the_App_s_records_when_the_test_failed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := &failedTB{TB: t}
		a := apptest.Start(tb, func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			var r otellog.Record
			r.SetSeverity(otellog.SeverityWarn)
			r.SetSeverityText("WARN")
			r.SetBody(attribute.StringValue("reconcile failed"))
			r.AddAttributes(attribute.String("object", "shop/cache"), attribute.String("error", `no "size"`))
			s.Telemetry.LoggerProvider.Logger("greeter").Emit(ctx, r)
			return nil, nil
		})
		require.Equal(t, 0, a.Wait())
		for _, c := range tb.cleanups {
			c()
		}
		require.Len(t, tb.logged, 2, "stderr, then the records: %q", tb.logged)
		require.Regexp(t, `^apptest: the App's log records:\n\d\d:\d\d:\d\d\.\d{3} WARN "reconcile failed" object=shop/cache error="no \\"size\\""\n$`, tb.logged[1])
	})
}

func TestTelemetry_FormatRecords_of_none_is_empty(t *testing.T) {
	require.Empty(t, apptest.NewTelemetry().FormatRecords())
}

// A record's control characters are quoted, as its newlines are: a
// carriage return or a terminal's ESC in what the App logged would
// otherwise rewrite the test's own output.
func TestTelemetry_FormatRecords_quotes_control_characters(t *testing.T) {
	tel := apptest.NewTelemetry()
	var r otellog.Record
	r.SetSeverityText("INFO")
	r.SetBody(attribute.StringValue("read\rFAKE"))
	r.AddAttributes(attribute.String("k", "v\x1b[2J"))
	tel.Telemetry.LoggerProvider.Logger("t").Emit(t.Context(), r)
	require.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} INFO "read\\rFAKE" k="v\\x1b\[2J"\n$`, tel.FormatRecords())
}

// A nil Init is reported as app.Run reports it, on stderr with the
// configuration's exit code, not as a panic of apptest's wrapper.
func TestStart_a_nil_Init_exits_78_saying_so(t *testing.T) {
	a := apptest.Start(t, nil)
	require.Equal(t, 78, a.Wait())
	require.Contains(t, a.Stderr(), "app: Init is nil")
}
