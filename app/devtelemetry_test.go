package app_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app"
)

// emitReconcileLike emits what a controller's reconcile does: a record
// in its span, an API request's client span below it, the span itself,
// failed, and a Lease renewal's root client span, then a panic's record
// with its stack.
func emitReconcileLike(ctx context.Context, s *app.Setup) {
	tracer := s.Telemetry.TracerProvider.Tracer("github.com/loam-dev/loam/kube")
	logger := s.Telemetry.LoggerProvider.Logger("github.com/loam-dev/loam/kube")

	ctx, span := tracer.Start(ctx, "reconcile Memcached", trace.WithNewRoot(),
		trace.WithAttributes(attribute.String("k8s.namespace.name", "default"), attribute.String("loam.kube.object.name", "cache")))
	time.Sleep(2100 * time.Microsecond)
	var r log.Record
	r.SetTimestamp(time.Now())
	r.SetSeverity(log.SeverityInfo)
	r.SetBody(attribute.StringValue("scaled"))
	r.AddAttributes(attribute.String("loam.kube.object.name", "cache"), attribute.Int("replicas", 3),
		attribute.String("reason", "spec changed"))
	logger.Emit(ctx, r)
	_, req := tracer.Start(ctx, "PATCH", trace.WithSpanKind(trace.SpanKindClient))
	req.End()
	span.SetAttributes(attribute.String("loam.kube.controller.reconcile.outcome", "error"))
	span.SetStatus(codes.Error, "apply Deployment default/cache: conflict")
	span.End()

	_, lease := s.Telemetry.TracerProvider.Tracer("client").Start(context.Background(), "PUT", trace.WithSpanKind(trace.SpanKindClient))
	lease.End()

	var p log.Record
	p.SetTimestamp(time.Now())
	p.SetSeverity(log.SeverityError)
	p.SetBody(attribute.StringValue("reconcile panicked"))
	p.AddAttributes(attribute.String("exception.stacktrace", "goroutine 7 [running]:\nmain.f()\n\tmain.go:3\n"))
	logger.Emit(context.Background(), p)
}

func TestDevTelemetryPrintsRecordsAndReconcilesReadably(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   func(w *bytes.Buffer) []app.DevOption
		stderr bool // printed to the Process's stderr, not w
	}{
		{"to stderr", func(*bytes.Buffer) []app.DevOption { return nil }, true},
		{"to a writer", func(w *bytes.Buffer) []app.DevOption { return []app.DevOption{app.DevWriter(w)} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestProcess(nil)
				var w bytes.Buffer
				init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
					emitReconcileLike(ctx, s)
					return nil, nil
				}
				require.Equal(t, 0, app.Run(t.Context(), init, p.option(), app.WithDevTelemetry(tc.opts(&w)...)))

				out := w.String()
				if tc.stderr {
					out = p.stderr.String()
					require.Empty(t, w.String())
				} else {
					require.Empty(t, p.stderr.String(), "DevWriter's writer replaces stderr")
				}
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				require.Len(t, lines, 7, "a record, the failed reconcile's span, the panic and its stack, and no Lease's request:\n%s", out)
				// synctest's clock starts at midnight, 2000-01-01 UTC.
				require.Regexp(t, `^00:00:00\.002 INFO  scaled  loam\.kube\.object\.name=cache  replicas=3  reason="spec changed"  trace=[0-9a-f]{8}$`, lines[0])
				require.Regexp(t, `^00:00:00\.002 SPAN  reconcile Memcached  2\.1ms  k8s\.namespace\.name=default  loam\.kube\.object\.name=cache  `+
					`loam\.kube\.controller\.reconcile\.outcome=error  error="apply Deployment default/cache: conflict"  trace=[0-9a-f]{8}$`, lines[1])
				require.Equal(t, lines[0][len(lines[0])-8:], lines[1][len(lines[1])-8:], "the record is in the reconcile's trace")
				require.Equal(t, "00:00:00.002 ERROR reconcile panicked", lines[2], "no trace outside a span; the stack goes below")
				require.Equal(t, []string{"    exception.stacktrace:", "      goroutine 7 [running]:", "      main.f()", "      \tmain.go:3"}, lines[3:])
			})
		})
	}
}

// Without the option, nothing is printed readably: the default writes JSON
// lines, and no span.
func TestNoDevTelemetryWithoutTheOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			emitReconcileLike(ctx, s)
			return nil, nil
		}
		require.Equal(t, 0, app.Run(t.Context(), init, p.option()))
		records, plain := p.logLines(t)
		require.Empty(t, plain, "every line is JSON:\n%s", p.stderr.String())
		require.Len(t, records, 2, "the two records, and no span")
		require.NotContains(t, p.stderr.String(), "SPAN")
	})
}

// A later telemetry option replaces WithDevTelemetry, as each replaces an
// earlier one, and the other way round.
func TestDevTelemetryIsReplacedByALaterOption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		var dev bytes.Buffer
		init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			emitReconcileLike(ctx, s)
			return nil, nil
		}
		json := func(ctx context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
			return app.Telemetry{}, nil, nil
		}
		require.Equal(t, 0, app.Run(t.Context(), init, p.option(), app.WithDevTelemetry(app.DevWriter(&dev)), app.WithTelemetry(json)))
		require.Empty(t, dev.String())

		require.Equal(t, 0, app.Run(t.Context(), init, p.option(), app.WithTelemetry(json), app.WithDevTelemetry(app.DevWriter(&dev))))
		require.Contains(t, dev.String(), "SPAN  reconcile Memcached")
	})
}

// A failed telemetry can't hide the App's: WithDevTelemetry with its
// writer failing still runs the App.
func TestDevTelemetryDropsLinesItCannotWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			emitReconcileLike(ctx, s)
			return nil, nil
		}
		w := &failingWriter{}
		require.Equal(t, 0, app.Run(t.Context(), init, p.option(), app.WithDevTelemetry(app.DevWriter(w))))
		require.Equal(t, 3, w.calls, "one write a line, the stack's with its line")
	})
}

type failingWriter struct{ calls int }

func (w *failingWriter) Write([]byte) (int, error) {
	w.calls++
	return 0, errors.New("disk full")
}

// A record's text can't forge another line or drive the terminal: a
// newline, a carriage return and ESC in its body, its keys and its values
// below the line are printed as escapes.
func TestDevTelemetryEscapesWhatATerminalWouldActOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		var w bytes.Buffer
		init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			var r log.Record
			r.SetTimestamp(time.Now())
			r.SetSeverity(log.SeverityInfo)
			r.SetBody(attribute.StringValue("read web\n00:00:00.000 ERROR forged\r\x1b[2J"))
			r.AddAttributes(attribute.String("k\x1b[31m", "v"), attribute.String("stack", "first\n\x1b[2Jsecond\n"))
			s.Telemetry.LoggerProvider.Logger("test").Emit(ctx, r)
			return nil, nil
		}
		require.Equal(t, 0, app.Run(t.Context(), init, p.option(), app.WithDevTelemetry(app.DevWriter(&w))))
		require.Equal(t, `00:00:00.000 INFO  read web\n00:00:00.000 ERROR forged\r\x1b[2J  k\x1b[31m=v`+"\n"+
			"    stack:\n      first\n      \\x1b[2Jsecond\n", w.String())
	})
}
