package app

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// jsonLines is the default LoggerProvider's processor: it writes each
// record to a stream as one JSON object on a line of its own, as it is
// emitted. Writing at once, rather than batching, keeps the lines in order
// with whatever else the App writes to the stream, and leaves nothing to
// lose when the process exits.
type jsonLines struct {
	w      io.Writer
	closed atomic.Bool
}

var _ sdklog.Processor = (*jsonLines)(nil)

func newJSONLines(w io.Writer) *jsonLines { return &jsonLines{w: w} }

// jsonLine is one record as it is written. Its fields are in the order a
// reader scans a line.
type jsonLine struct {
	Time       string         `json:"time"`
	Severity   string         `json:"severity,omitempty"`
	Scope      string         `json:"scope,omitempty"`
	Body       any            `json:"body"`
	Attributes map[string]any `json:"attributes,omitempty"`
	TraceID    string         `json:"trace_id,omitempty"`
	SpanID     string         `json:"span_id,omitempty"`
}

// Enabled reports that every record is written.
func (*jsonLines) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

// OnEmit writes r as one line. A record that can't be written is dropped:
// the stream it would be reported on is the one that failed.
func (j *jsonLines) OnEmit(_ context.Context, r *sdklog.Record) error {
	if j.closed.Load() {
		return nil
	}
	b, err := json.Marshal(lineOf(r))
	if err != nil {
		// Every value lineOf makes encodes; were one not to, its error
		// would have nowhere to go but this same stream.
		return nil
	}
	_, _ = j.w.Write(append(b, '\n'))
	return nil
}

// ForceFlush does nothing: every record is written as it is emitted.
func (*jsonLines) ForceFlush(context.Context) error { return nil }

// Shutdown stops writing records.
func (j *jsonLines) Shutdown(context.Context) error {
	j.closed.Store(true)
	return nil
}

// lineOf turns r into the line written for it.
func lineOf(r *sdklog.Record) jsonLine {
	t := r.Timestamp()
	if t.IsZero() {
		t = r.ObservedTimestamp()
	}
	l := jsonLine{
		Time:     t.UTC().Format(time.RFC3339Nano),
		Severity: r.SeverityText(),
		Scope:    r.InstrumentationScope().Name,
		Body:     jsonValue(r.Body()),
	}
	if l.Severity == "" && r.Severity() != log.SeverityUndefined {
		l.Severity = r.Severity().String()
	}
	if n := r.AttributesLen(); n > 0 {
		l.Attributes = make(map[string]any, n)
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			l.Attributes[string(kv.Key)] = jsonValue(kv.Value)
			return true
		})
	}
	if id := r.TraceID(); id.IsValid() {
		l.TraceID = id.String()
	}
	if id := r.SpanID(); id.IsValid() {
		l.SpanID = id.String()
	}
	return l
}

// jsonValue turns v into a value encoding/json writes: numbers, strings,
// booleans, arrays and objects as they are; bytes as base64; a float that
// JSON has no number for as its name, such as "NaN".
func jsonValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOL:
		return v.AsBool()
	case attribute.INT64:
		return v.AsInt64()
	case attribute.FLOAT64:
		return jsonFloat(v.AsFloat64())
	case attribute.STRING:
		return v.AsString()
	case attribute.BOOLSLICE:
		return v.AsBoolSlice()
	case attribute.INT64SLICE:
		return v.AsInt64Slice()
	case attribute.FLOAT64SLICE:
		fs := v.AsFloat64Slice()
		out := make([]any, len(fs))
		for i, f := range fs {
			out[i] = jsonFloat(f)
		}
		return out
	case attribute.STRINGSLICE:
		return v.AsStringSlice()
	case attribute.BYTESLICE:
		return v.AsByteSlice()
	case attribute.SLICE:
		vs := v.AsSlice()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = jsonValue(e)
		}
		return out
	case attribute.MAP:
		kvs := v.AsMap()
		out := make(map[string]any, len(kvs))
		for _, kv := range kvs {
			out[string(kv.Key)] = jsonValue(kv.Value)
		}
		return out
	default:
		return nil
	}
}

// jsonFloat returns f, or its name when JSON has no number for it.
func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	default:
		return f
	}
}
