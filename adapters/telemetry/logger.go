package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/ports"
)

// LoggerNameKey is the attribute that holds a logr.Logger's name, the
// names given to WithName joined with "/", on a record of Logger's.
const LoggerNameKey = attribute.Key("logger")

// missingValue is the value of a key logged without one.
const missingValue = "<no-value>"

// maxValueDepth bounds how deep a logged value is turned into nested
// attribute values; deeper parts are formatted with fmt.
const maxValueDepth = 8

// Logger returns a logr.Logger writing to the LoggerProvider under the
// scope github.com/loam-dev/loam/kube: the logger to put in the context of
// everything of client-go's the controller runs, with klog.NewContext, and
// to hand a work queue or a reflector that takes one.
//
// An Info at verbosity 0 is an INFO record; an Info at verbosity n, up to
// the Config's Verbosity, is a DEBUG record (severity INFO minus n, as
// OpenTelemetry's logr bridge has it); higher verbosities are dropped.
// Every Error, at any verbosity, is an ERROR record with the error as the
// record's error and as exception.message. The message is the record's
// body; the key/value pairs, WithValues' among them, are its attributes,
// after loam.kube.controller.name; the logger's name is the attribute
// logger. A value that implements logr.Marshaler is logged as MarshalLog
// returns it, an error or a fmt.Stringer as its string, and slices, maps
// and structs as nested values.
func (r *Recorder) Logger() logr.Logger {
	return newLogger(r.logger, r.verbosity, r.name)
}

// NewLogger returns a logr.Logger writing to logger as Recorder.Logger
// does, at verbosity 0, with attrs on every record: the logger to put in
// the context of client-go's code that runs outside a controller, such as
// an informer of a Service's own.
func NewLogger(logger log.Logger, attrs ...attribute.KeyValue) logr.Logger {
	return newLogger(logger, 0, attrs...)
}

// newLogger returns the logr.Logger of a sink writing to logger.
func newLogger(logger log.Logger, verbosity int, attrs ...attribute.KeyValue) logr.Logger {
	return logr.New(&sink{logger: logger, verbosity: verbosity, attrs: slices.Clip(attrs)})
}

// reconcileLogger returns the logr.Logger a reconcile of key logs through:
// Recorder.Logger's, with the object's attributes on every record, and
// every record emitted in span's context, so that it carries the
// reconcile span's trace and span IDs.
func (r *Recorder) reconcileLogger(key ports.Key, span trace.SpanContext) logr.Logger {
	attrs := append([]attribute.KeyValue{r.name}, objectAttributes(key)...)
	return logr.New(&sink{logger: r.logger, verbosity: r.verbosity, attrs: attrs, span: span})
}

// sink is a logr.LogSink writing to an OpenTelemetry Logger.
type sink struct {
	logger    log.Logger
	verbosity int
	name      string
	// attrs are the attributes of every record: the controller's name,
	// the reconciled object's for a reconcile's logger, then WithValues'
	// pairs.
	attrs []attribute.KeyValue
	// span is the reconcile span a reconcile's records belong to; invalid
	// for a logger of no reconcile. A logr.LogSink's calls take no
	// context, so the sink keeps the span's IDs rather than the context.
	span trace.SpanContext
}

// emitContext returns the context a record is emitted in: one carrying
// the sink's span, whose IDs the record then carries.
func (s *sink) emitContext() context.Context {
	if !s.span.IsValid() {
		return context.Background()
	}
	return trace.ContextWithSpanContext(context.Background(), s.span)
}

var _ logr.LogSink = (*sink)(nil)

// Init does nothing: a record carries no call site.
func (*sink) Init(logr.RuntimeInfo) {}

// severityOf returns the severity of an Info at level.
func severityOf(level int) log.Severity {
	return max(log.SeverityInfo-log.Severity(min(level, int(log.SeverityInfo))), log.SeverityTrace1)
}

// Enabled reports whether an Info at level is recorded.
func (s *sink) Enabled(level int) bool {
	return level <= s.verbosity &&
		s.logger.Enabled(context.Background(), log.EnabledParameters{Severity: severityOf(level)})
}

// Info emits an Info's record.
func (s *sink) Info(level int, msg string, keysAndValues ...any) {
	rec := s.record(severityOf(level), msg, keysAndValues)
	s.logger.Emit(s.emitContext(), rec)
}

// Error emits an ERROR record with err; an INFO record when err is a
// cancelled context's, since a request cut short because its caller
// stopped waiting — a shutdown, a Lease given up — is how stopping looks
// to client-go, not a failure.
func (s *sink) Error(err error, msg string, keysAndValues ...any) {
	sev := log.SeverityError
	if errors.Is(err, context.Canceled) {
		sev = log.SeverityInfo
	}
	rec := s.record(sev, msg, keysAndValues)
	if err != nil {
		rec.SetErr(err)
		rec.AddAttributes(exceptionMessageKey.String(safeError(err)))
	}
	s.logger.Emit(s.emitContext(), rec)
}

// WithValues returns a sink whose records carry keysAndValues too.
func (s *sink) WithValues(keysAndValues ...any) logr.LogSink {
	c := *s
	c.attrs = append(slices.Clip(s.attrs), pairs(keysAndValues)...)
	return &c
}

// WithName returns a sink whose records' logger name has name appended.
func (s *sink) WithName(name string) logr.LogSink {
	c := *s
	if c.name == "" {
		c.name = name
	} else {
		c.name += "/" + name
	}
	return &c
}

func (s *sink) record(sev log.Severity, msg string, keysAndValues []any) log.Record {
	var rec log.Record
	rec.SetTimestamp(time.Now())
	rec.SetSeverity(sev)
	rec.SetSeverityText(sev.String())
	rec.SetBody(attribute.StringValue(msg))
	rec.AddAttributes(s.attrs...)
	if s.name != "" {
		rec.AddAttributes(LoggerNameKey.String(s.name))
	}
	rec.AddAttributes(pairs(keysAndValues)...)
	return rec
}

// pairs turns logr's alternating keys and values into attributes. A key
// that isn't a string is formatted with fmt; a last key without a value
// gets the value "<no-value>".
func pairs(keysAndValues []any) []attribute.KeyValue {
	if len(keysAndValues) == 0 {
		return nil
	}
	attrs := make([]attribute.KeyValue, 0, (len(keysAndValues)+1)/2)
	for i := 0; i < len(keysAndValues); i += 2 {
		key, ok := keysAndValues[i].(string)
		if !ok {
			key = fmt.Sprint(keysAndValues[i])
		}
		value := attribute.StringValue(missingValue)
		if i+1 < len(keysAndValues) {
			value = valueOf(keysAndValues[i+1], 0)
		}
		attrs = append(attrs, attribute.KeyValue{Key: attribute.Key(key), Value: value})
	}
	return attrs
}

// safeError returns err's message, or what its Error method panicked
// with: logging must never crash client-go's goroutine that logs.
func safeError(err error) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprintf("<panic: %v>", p)
		}
	}()
	return err.Error()
}

// valueOf turns a logged value into an attribute value. A MarshalLog,
// Error or String method that panics gives "<panic: …>" instead.
func valueOf(v any, depth int) (value attribute.Value) {
	defer func() {
		if p := recover(); p != nil {
			value = attribute.StringValue(fmt.Sprintf("<panic: %v>", p))
		}
	}()
	if v == nil {
		return attribute.Value{}
	}
	rv := reflect.ValueOf(v)
	if (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) && rv.IsNil() {
		return attribute.Value{}
	}
	if depth >= maxValueDepth {
		return attribute.StringValue(fmt.Sprintf("%+v", v))
	}
	switch x := v.(type) {
	case logr.Marshaler:
		return valueOf(x.MarshalLog(), depth+1)
	case error:
		return attribute.StringValue(x.Error())
	case fmt.Stringer:
		return attribute.StringValue(x.String())
	case string:
		return attribute.StringValue(x)
	case bool:
		return attribute.BoolValue(x)
	case []byte:
		return attribute.ByteSliceValue(x)
	}
	return reflected(rv, depth)
}

// reflected turns a value of no type valueOf knows into an attribute
// value, by its kind.
func reflected(rv reflect.Value, depth int) attribute.Value {
	switch rv.Kind() {
	case reflect.Bool:
		return attribute.BoolValue(rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return attribute.Int64Value(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return attribute.Int64Value(int64(u))
		}
		return attribute.StringValue(fmt.Sprint(rv.Uint()))
	case reflect.Float32, reflect.Float64:
		return attribute.Float64Value(rv.Float())
	case reflect.String:
		return attribute.StringValue(rv.String())
	case reflect.Pointer, reflect.Interface:
		return valueOf(rv.Elem().Interface(), depth+1)
	case reflect.Slice, reflect.Array:
		values := make([]attribute.Value, rv.Len())
		for i := range values {
			values[i] = valueOf(rv.Index(i).Interface(), depth+1)
		}
		return attribute.SliceValue(values...)
	case reflect.Map:
		kvs := make([]attribute.KeyValue, 0, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			kvs = append(kvs, attribute.KeyValue{
				Key:   attribute.Key(fmt.Sprint(it.Key().Interface())),
				Value: valueOf(it.Value().Interface(), depth+1),
			})
		}
		slices.SortFunc(kvs, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
		return attribute.MapValue(kvs...)
	case reflect.Struct:
		return structValue(rv, depth)
	}
	return attribute.StringValue(fmt.Sprintf("%+v", rv.Interface()))
}

// structValue turns a struct into a map of its exported fields, named as
// encoding/json would name them, without a zero field tagged omitempty.
func structValue(rv reflect.Value, depth int) attribute.Value {
	t := rv.Type()
	kvs := make([]attribute.KeyValue, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		field := rv.Field(i)
		if field.IsZero() && slices.Contains(strings.Split(opts, ","), "omitempty") {
			continue
		}
		kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(name), Value: valueOf(field.Interface(), depth+1)})
	}
	return attribute.MapValue(kvs...)
}
