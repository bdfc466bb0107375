// Package otlptest is an OTLP receiver for tests: an http.Handler that
// serves /v1/traces, /v1/metrics and /v1/logs as a collector does, and
// the collector's gRPC services (RegisterGRPC), which decode each
// request's protobuf body (gzipped or not) with the OTLP protocol's own
// types and keep what arrived for the test to check.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds a request's body, decompressed.
const maxBody = 64 << 20

// Request is one export the Receiver was sent.
type Request struct {
	// Path is the request's path, such as /v1/traces.
	Path string
	// Header is the request's header: the exporter's own headers and
	// those OTEL_EXPORTER_OTLP_HEADERS set.
	Header http.Header
}

// Span is one span received, with its resource's and scope's names.
type Span struct {
	// Resource holds the resource's attributes, such as service.name.
	Resource map[string]any
	// Scope is the instrumentation scope's name.
	Scope string
	// Name is the span's name, such as "reconcile Memcached".
	Name string
	// TraceID and SpanID are hex, as W3C trace context writes them.
	TraceID, SpanID string
	// Attributes are the span's attributes.
	Attributes map[string]any
}

// Metric is one metric received: its name and its data points'
// attributes.
type Metric struct {
	// Resource holds the resource's attributes.
	Resource map[string]any
	// Scope is the instrumentation scope's name.
	Scope string
	// Name is the instrument's name.
	Name string
	// Points holds each data point's attributes.
	Points []map[string]any
}

// LogRecord is one log record received.
type LogRecord struct {
	// Resource holds the resource's attributes.
	Resource map[string]any
	// Scope is the instrumentation scope's name.
	Scope string
	// Severity is the record's severity text, such as WARN, or else its
	// severity number's name.
	Severity string
	// Body is the record's body, as a string when it is one.
	Body any
	// Attributes are the record's attributes.
	Attributes map[string]any
	// TraceID and SpanID are hex, "" outside a span.
	TraceID, SpanID string
}

// Receiver is an OTLP/HTTP receiver that keeps every span, metric and log
// record it is sent. Serve it with httptest.NewServer; it is safe for
// concurrent use.
type Receiver struct {
	mu       sync.Mutex
	requests []Request
	spans    []Span
	metrics  []Metric
	logs     []LogRecord
	logReqs  []*collogspb.ExportLogsServiceRequest
}

// NewReceiver returns a Receiver that has received nothing.
func NewReceiver() *Receiver { return &Receiver{} }

// ServeHTTP receives one export: a POST of an OTLP protobuf request to
// /v1/traces, /v1/metrics or /v1/logs, answered with the protocol's
// success response. Anything else is a 404, 405 or 400.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var (
		msg  proto.Message
		resp proto.Message
	)
	switch req.URL.Path {
	case "/v1/traces":
		msg, resp = &coltracepb.ExportTraceServiceRequest{}, &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		msg, resp = &colmetricspb.ExportMetricsServiceRequest{}, &colmetricspb.ExportMetricsServiceResponse{}
	case "/v1/logs":
		msg, resp = &collogspb.ExportLogsServiceRequest{}, &collogspb.ExportLogsServiceResponse{}
	default:
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := readBody(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := proto.Unmarshal(body, msg); err != nil {
		http.Error(w, fmt.Sprintf("decoding %s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.keep(Request{Path: req.URL.Path, Header: req.Header.Clone()}, msg)
	out, err := proto.Marshal(resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// readBody returns req's body, gunzipped when its Content-Encoding is
// gzip.
func readBody(req *http.Request) ([]byte, error) {
	var body io.Reader = req.Body
	switch req.Header.Get("Content-Encoding") {
	case "gzip":
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		defer gz.Close()
		body = gz
	case "", "identity":
	default:
		return nil, fmt.Errorf("content encoding %q is not supported", req.Header.Get("Content-Encoding"))
	}
	b, err := io.ReadAll(io.LimitReader(body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("reading the body: %w", err)
	}
	return b, nil
}

// keep records req and what msg holds.
func (r *Receiver) keep(req Request, msg proto.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req)
	switch m := msg.(type) {
	case *coltracepb.ExportTraceServiceRequest:
		for _, rs := range m.GetResourceSpans() {
			res := attributes(rs.GetResource().GetAttributes())
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					r.spans = append(r.spans, Span{
						Resource:   res,
						Scope:      ss.GetScope().GetName(),
						Name:       s.GetName(),
						TraceID:    hex.EncodeToString(s.GetTraceId()),
						SpanID:     hex.EncodeToString(s.GetSpanId()),
						Attributes: attributes(s.GetAttributes()),
					})
				}
			}
		}
	case *colmetricspb.ExportMetricsServiceRequest:
		for _, rm := range m.GetResourceMetrics() {
			res := attributes(rm.GetResource().GetAttributes())
			for _, sm := range rm.GetScopeMetrics() {
				for _, metric := range sm.GetMetrics() {
					r.metrics = append(r.metrics, Metric{
						Resource: res,
						Scope:    sm.GetScope().GetName(),
						Name:     metric.GetName(),
						Points:   points(metric),
					})
				}
			}
		}
	case *collogspb.ExportLogsServiceRequest:
		r.logReqs = append(r.logReqs, m)
		for _, rl := range m.GetResourceLogs() {
			res := attributes(rl.GetResource().GetAttributes())
			for _, sl := range rl.GetScopeLogs() {
				for _, l := range sl.GetLogRecords() {
					severity := l.GetSeverityText()
					if severity == "" {
						severity = l.GetSeverityNumber().String()
					}
					rec := LogRecord{
						Resource:   res,
						Scope:      sl.GetScope().GetName(),
						Severity:   severity,
						Body:       value(l.GetBody()),
						Attributes: attributes(l.GetAttributes()),
					}
					if id := l.GetTraceId(); len(id) > 0 {
						rec.TraceID = hex.EncodeToString(id)
					}
					if id := l.GetSpanId(); len(id) > 0 {
						rec.SpanID = hex.EncodeToString(id)
					}
					r.logs = append(r.logs, rec)
				}
			}
		}
	}
}

// Requests returns every export received, in the order they arrived.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// Spans returns every span received, in the order they arrived.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// SpansNamed returns the spans received named name.
func (r *Receiver) SpansNamed(name string) []Span {
	var named []Span
	for _, s := range r.Spans() {
		if s.Name == name {
			named = append(named, s)
		}
	}
	return named
}

// Metrics returns every metric received, once for each export it was in.
func (r *Receiver) Metrics() []Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.metrics)
}

// MetricsNamed returns the metrics received named name, once for each
// export.
func (r *Receiver) MetricsNamed(name string) []Metric {
	var named []Metric
	for _, m := range r.Metrics() {
		if m.Name == name {
			named = append(named, m)
		}
	}
	return named
}

// Logs returns every log record received, in the order they arrived.
func (r *Receiver) Logs() []LogRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.logs)
}

// LogRequests returns every logs export received, decoded, in the order
// they arrived, for a test to check what LogRecord doesn't hold, such as
// timestamps, severity numbers and scope versions.
func (r *Receiver) LogRequests() []*collogspb.ExportLogsServiceRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*collogspb.ExportLogsServiceRequest, len(r.logReqs))
	for i, m := range r.logReqs {
		out[i] = proto.CloneOf(m)
	}
	return out
}

// points returns the attributes of each of m's data points.
func points(m *metricspb.Metric) []map[string]any {
	var kvs [][]*commonpb.KeyValue
	switch d := m.GetData().(type) {
	case *metricspb.Metric_Gauge:
		for _, p := range d.Gauge.GetDataPoints() {
			kvs = append(kvs, p.GetAttributes())
		}
	case *metricspb.Metric_Sum:
		for _, p := range d.Sum.GetDataPoints() {
			kvs = append(kvs, p.GetAttributes())
		}
	case *metricspb.Metric_Histogram:
		for _, p := range d.Histogram.GetDataPoints() {
			kvs = append(kvs, p.GetAttributes())
		}
	case *metricspb.Metric_ExponentialHistogram:
		for _, p := range d.ExponentialHistogram.GetDataPoints() {
			kvs = append(kvs, p.GetAttributes())
		}
	case *metricspb.Metric_Summary:
		for _, p := range d.Summary.GetDataPoints() {
			kvs = append(kvs, p.GetAttributes())
		}
	}
	out := make([]map[string]any, len(kvs))
	for i, kv := range kvs {
		out[i] = attributes(kv)
	}
	return out
}

// attributes turns OTLP key-values into a map of Go values.
func attributes(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

// value turns an OTLP value into a string, bool, int64, float64, []byte,
// []any or map[string]any; nil for none.
func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return attributes(x.KvlistValue.GetValues())
	default:
		return nil
	}
}
