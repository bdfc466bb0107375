// Package jsonlog is the examples' log output: an OpenTelemetry log
// processor that writes each record to a Process's stderr as one JSON
// object a line, naming the service. The Memcached operator's and the
// Database controller's TelemetryBuilders both log through it.
package jsonlog

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// Processor writes each record as it is emitted, as one JSON object on a
// line of its own. New makes one.
type Processor struct {
	mu      sync.Mutex
	w       io.Writer
	service string
}

// New returns a Processor that writes to w, naming service, the
// OpenTelemetry service.name, in every line.
func New(w io.Writer, service string) *Processor {
	return &Processor{w: w, service: service}
}

// line is one record, as written.
type line struct {
	Time       string         `json:"time"`
	Service    string         `json:"service"`
	Severity   string         `json:"severity,omitempty"`
	Body       string         `json:"body"`
	Attributes map[string]any `json:"attributes,omitempty"`
	TraceID    string         `json:"trace_id,omitempty"`
}

// OnEmit writes r. A write that fails is dropped: a log line has nowhere
// else to go. It returns an error only when r cannot be encoded.
func (p *Processor) OnEmit(_ context.Context, r *sdklog.Record) error {
	l := line{
		Time:     r.Timestamp().UTC().Format(time.RFC3339Nano),
		Service:  p.service,
		Severity: r.SeverityText(),
		Body:     r.Body().String(),
	}
	if l.Severity == "" {
		l.Severity = r.Severity().String()
	}
	if id := r.TraceID(); id.IsValid() {
		l.TraceID = id.String()
	}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		if l.Attributes == nil {
			l.Attributes = map[string]any{}
		}
		l.Attributes[string(kv.Key)] = kv.Value.String()
		return true
	})
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, _ = p.w.Write(append(b, '\n'))
	return nil
}

// Enabled writes every record.
func (*Processor) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

// Shutdown has nothing to flush: every record is written as it comes.
func (*Processor) Shutdown(context.Context) error { return nil }

// ForceFlush has nothing to flush either.
func (*Processor) ForceFlush(context.Context) error { return nil }
