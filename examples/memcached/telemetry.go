package memcached

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/loam-dev/loam/app"
)

// Telemetry returns the operator's telemetry builder: its log records go to
// the Process's stderr as one JSON object a line, each naming service, the
// OpenTelemetry service.name. Traces and metrics are left to the App's
// no-op defaults; an operator that exports them adds its exporters here.
func Telemetry(service string) app.TelemetryBuilder {
	return func(_ context.Context, p app.Process) (app.Telemetry, func(context.Context) error, error) {
		res := resource.NewSchemaless(attribute.String("service.name", service))
		lp := sdklog.NewLoggerProvider(
			sdklog.WithResource(res),
			sdklog.WithProcessor(&jsonRecords{w: p.Stderr, service: service}),
		)
		return app.Telemetry{LoggerProvider: lp}, lp.Shutdown, nil
	}
}

// jsonRecords writes each record as it is emitted, as one JSON object on a
// line of its own.
type jsonRecords struct {
	mu      sync.Mutex
	w       io.Writer
	service string
}

// record is one line.
type record struct {
	Time       string         `json:"time"`
	Service    string         `json:"service"`
	Severity   string         `json:"severity,omitempty"`
	Body       string         `json:"body"`
	Attributes map[string]any `json:"attributes,omitempty"`
	TraceID    string         `json:"trace_id,omitempty"`
}

// OnEmit writes r. A write that fails is dropped: a log line has nowhere
// else to go.
func (j *jsonRecords) OnEmit(_ context.Context, r *sdklog.Record) error {
	line := record{
		Time:     r.Timestamp().UTC().Format(time.RFC3339Nano),
		Service:  j.service,
		Severity: r.SeverityText(),
		Body:     r.Body().String(),
	}
	if line.Severity == "" {
		line.Severity = r.Severity().String()
	}
	if id := r.TraceID(); id.IsValid() {
		line.TraceID = id.String()
	}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		if line.Attributes == nil {
			line.Attributes = map[string]any{}
		}
		line.Attributes[string(kv.Key)] = kv.Value.String()
		return true
	})
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.w.Write(append(b, '\n'))
	return nil
}

// Enabled writes every record.
func (*jsonRecords) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

// Shutdown has nothing to flush: every record is written as it comes.
func (*jsonRecords) Shutdown(context.Context) error { return nil }

// ForceFlush has nothing to flush either.
func (*jsonRecords) ForceFlush(context.Context) error { return nil }
