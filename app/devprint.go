package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// devTimeLayout is the time at the start of each of WithDevTelemetry's
// lines: a local run lasts minutes, so the date would be noise.
const devTimeLayout = "15:04:05.000"

// devTraceDigits is how much of a trace ID a line shows: enough to tell a
// local run's traces apart and to find them in a trace viewer.
const devTraceDigits = 8

// devPrinter writes WithDevTelemetry's lines to one writer, a line and its
// continuation at a time, and nothing once shut down.
type devPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	closed atomic.Bool
}

func newDevPrinter(w io.Writer) *devPrinter { return &devPrinter{w: w} }

// print writes b whole, unless the printer is shut down. A line that
// can't be written is dropped: the stream it would be reported on is the
// one that failed.
func (p *devPrinter) print(b []byte) {
	if p.closed.Load() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.w.Write(b)
}

// devLine builds one of WithDevTelemetry's lines, with the multi-line
// values of its attributes below it, indented.
type devLine struct {
	b     strings.Builder
	below []attribute.KeyValue
}

// head starts the line: the time, a tag such as WARN or SPAN padded to 5,
// and the body.
func (l *devLine) head(t time.Time, tag, body string) {
	l.b.WriteString(t.UTC().Format(devTimeLayout))
	fmt.Fprintf(&l.b, " %-5s %s", devSafe(tag), devSafe(body))
}

// attr adds key=value, or, for a value of several lines, such as a stack,
// keeps it for below the line.
func (l *devLine) attr(kv attribute.KeyValue) {
	if kv.Value.Type() == attribute.STRING && strings.Contains(strings.TrimRight(kv.Value.AsString(), "\n"), "\n") {
		l.below = append(l.below, kv)
		return
	}
	l.b.WriteString("  ")
	l.b.WriteString(devSafe(string(kv.Key)))
	l.b.WriteByte('=')
	l.b.WriteString(devValue(kv.Value))
}

// trace ends the line with the start of id, when it is valid.
func (l *devLine) trace(id trace.TraceID) {
	if id.IsValid() {
		l.b.WriteString("  trace=")
		l.b.WriteString(id.String()[:devTraceDigits])
	}
}

// bytes returns the line, its newline, and what goes below it.
func (l *devLine) bytes() []byte {
	l.b.WriteByte('\n')
	for _, kv := range l.below {
		fmt.Fprintf(&l.b, "    %s:\n", devSafe(string(kv.Key)))
		for line := range strings.Lines(strings.TrimRight(kv.Value.AsString(), "\n")) {
			l.b.WriteString("      ")
			l.b.WriteString(devSafe(strings.TrimRight(line, "\n")))
			l.b.WriteByte('\n')
		}
	}
	return []byte(l.b.String())
}

// devValue writes a value as it reads best on a line: a string as it is,
// or quoted when it is empty or holds a space, a quote, an = or anything
// unprintable; anything else as JSON.
func devValue(v attribute.Value) string {
	if v.Type() == attribute.STRING {
		s := v.AsString()
		if s == "" || strings.ContainsFunc(s, func(r rune) bool {
			return unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r)
		}) {
			return strconv.Quote(s)
		}
		return s
	}
	b, err := json.Marshal(jsonValue(v))
	if err != nil {
		return v.String()
	}
	return string(b)
}

// devSafe returns s with each rune a terminal acts on, a tab's aside,
// written as a Go escape: a newline or carriage return, which would start
// what reads as another record, and ESC, which starts a sequence that
// recolours or clears the screen. A record's text may carry what the
// cluster's objects hold, which their writers chose.
func devSafe(s string) string {
	if !strings.ContainsFunc(s, devUnsafe) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !devUnsafe(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// devUnsafe reports whether a terminal would act on r rather than print it.
func devUnsafe(r rune) bool { return r != '\t' && !unicode.IsPrint(r) }

// devDuration writes d to a precision a person reads: 850µs, 2.1ms, 1.25s.
func devDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(10 * time.Millisecond).String()
	}
}

// devRecords is WithDevTelemetry's log processor: a line for every record,
// as it is emitted.
type devRecords struct{ p *devPrinter }

var _ sdklog.Processor = devRecords{}

// Enabled reports that every record is printed.
func (devRecords) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

// OnEmit prints r.
func (d devRecords) OnEmit(_ context.Context, r *sdklog.Record) error {
	var l devLine
	t := r.Timestamp()
	if t.IsZero() {
		t = r.ObservedTimestamp()
	}
	sev := r.SeverityText()
	if sev == "" && r.Severity() != log.SeverityUndefined {
		sev = r.Severity().String()
	}
	body := r.Body().AsString()
	if r.Body().Type() != attribute.STRING {
		body = devValue(r.Body())
	}
	l.head(t, sev, body)
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		l.attr(kv)
		return true
	})
	l.trace(r.TraceID())
	d.p.print(l.bytes())
	return nil
}

// ForceFlush does nothing: every record is printed as it is emitted.
func (devRecords) ForceFlush(context.Context) error { return nil }

// Shutdown stops printing.
func (d devRecords) Shutdown(context.Context) error {
	d.p.closed.Store(true)
	return nil
}

// devSpans is WithDevTelemetry's span processor: a line for every span
// that is the root of its trace in this process, a client request's
// excepted, and for every span that ended in an error.
type devSpans struct{ p *devPrinter }

var _ sdktrace.SpanProcessor = devSpans{}

// OnStart does nothing: a span is printed as it ends, with its duration.
func (devSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd prints s when it is a root, and not a client request's, or failed.
func (d devSpans) OnEnd(s sdktrace.ReadOnlySpan) {
	root := !s.Parent().IsValid() || s.Parent().IsRemote()
	failed := s.Status().Code == codes.Error
	if shown := root && s.SpanKind() != trace.SpanKindClient || failed; !shown {
		return
	}
	var l devLine
	l.head(s.EndTime(), "SPAN", s.Name())
	l.b.WriteString("  ")
	l.b.WriteString(devDuration(s.EndTime().Sub(s.StartTime())))
	for _, kv := range s.Attributes() {
		l.attr(kv)
	}
	if failed {
		l.attr(attribute.String("error", s.Status().Description))
	}
	l.trace(s.SpanContext().TraceID())
	d.p.print(l.bytes())
}

// ForceFlush does nothing: every span is printed as it ends.
func (devSpans) ForceFlush(context.Context) error { return nil }

// Shutdown stops printing.
func (d devSpans) Shutdown(context.Context) error {
	d.p.closed.Store(true)
	return nil
}
