package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// maxErrorBody bounds how much of a failed export's response body the
// error quotes.
const maxErrorBody = 1 << 10

// logExporter is an sdklog.Exporter that sends log records by OTLP/HTTP
// (http/protobuf) or OTLP/gRPC with the Settings' resource. It exists
// because the log SDK merges the real environment's OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME into every record's resource, and an sdklog.Record's
// resource can't be replaced as a span's or a metric's can: encoding the
// records ourselves is the only way to send our resource instead.
type logExporter struct {
	client *http.Client                // for http/protobuf
	rpc    collogspb.LogsServiceClient // for grpc, in place of client
	signal Signal
	res    *resourcepb.Resource
	schema string
	// initialBackoff and maxBackoff bound the wait between attempts.
	initialBackoff, maxBackoff time.Duration
	stopped                    atomic.Bool
}

// newLogExporter returns a logExporter that posts to s's endpoint with
// s's headers, timeout and compression through client, every record with
// res as its resource.
func newLogExporter(s Signal, client *http.Client, res *resource.Resource) *logExporter {
	return &logExporter{
		client:         client,
		signal:         s,
		res:            &resourcepb.Resource{Attributes: keyValues(res.Attributes())},
		schema:         res.SchemaURL(),
		initialBackoff: retryInitialInterval,
		maxBackoff:     retryMaxInterval,
	}
}

// newGRPCLogExporter returns a logExporter that sends to s's collector by
// gRPC on conn, with s's headers as metadata and s's timeout, every
// record with res as its resource; conn compresses when s says so.
func newGRPCLogExporter(s Signal, conn grpc.ClientConnInterface, res *resource.Resource) *logExporter {
	e := newLogExporter(s, nil, res)
	e.rpc = collogspb.NewLogsServiceClient(conn)
	return e
}

// logExporterFor returns s's log exporter, on a connection of c's.
func logExporterFor(c *conns, s Signal, res *resource.Resource) (*logExporter, error) {
	if s.Protocol == protocolGRPC {
		conn, err := c.grpcConn(s)
		if err != nil {
			return nil, err
		}
		return newGRPCLogExporter(s, conn, res), nil
	}
	client, _, err := c.httpClient(s)
	if err != nil {
		return nil, err
	}
	return newLogExporter(s, client, res), nil
}

// Export sends records in one request, retrying while the collector
// answers 429, 502, 503 or 504 (by gRPC: Unavailable, Aborted and the
// others the specification names retryable), or can't be reached, for as
// long as the Signal's timeout allows. It returns sdklog.ErrExporterShutdown after
// Shutdown, and otherwise an error naming the endpoint and the last
// status, or ctx's, on failure.
func (e *logExporter) Export(ctx context.Context, records []sdklog.Record) error {
	if e.stopped.Load() {
		return sdklog.ErrExporterShutdown
	}
	if len(records) == 0 {
		return nil
	}
	send := func(ctx context.Context) (bool, time.Duration, error) { return e.call(ctx, e.request(records)) }
	if e.rpc == nil {
		body, err := e.body(records)
		if err != nil {
			return fmt.Errorf("otlp: encoding %d log records for %s: %w", len(records), e.signal.Endpoint, err)
		}
		send = func(ctx context.Context) (bool, time.Duration, error) { return e.post(ctx, body) }
	}
	if e.signal.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.signal.Timeout)
		defer cancel()
	}
	backoff := e.initialBackoff
	for {
		retry, after, err := send(ctx)
		if err == nil || !retry {
			return err
		}
		wait := min(backoff, e.maxBackoff)
		if after > 0 {
			wait = after
		}
		// Retrying past the deadline would only fail later, with a less
		// telling error than the collector's.
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return errors.Join(err, ctx.Err())
		case <-timer.C:
		}
		backoff *= 2
	}
}

// body returns the encoded, and when the Signal says so gzipped,
// ExportLogsServiceRequest of records.
func (e *logExporter) body(records []sdklog.Record) ([]byte, error) {
	b, err := proto.Marshal(e.request(records))
	if err != nil {
		return nil, fmt.Errorf("marshalling: %w", err)
	}
	if !e.signal.Gzip {
		return b, nil
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	if _, err := gz.Write(b); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// post sends body once. It returns whether a failure is worth retrying
// and how long the collector asked to wait first (0 when it didn't say).
func (e *logExporter) post(ctx context.Context, body []byte) (retry bool, after time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.signal.Endpoint, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("otlp: exporting logs to %s: %w", e.signal.Endpoint, err)
	}
	for k, v := range e.signal.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.signal.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// A collector that is restarting refuses connections: retry,
		// unless ctx is what ended it.
		return ctx.Err() == nil, 0, fmt.Errorf("otlp: exporting logs to %s: %w", e.signal.Endpoint, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return false, 0, nil
	}
	err = fmt.Errorf("otlp: exporting logs to %s: %s: %s", e.signal.Endpoint, resp.Status, bytes.TrimSpace(msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s >= 0 {
			after = time.Duration(s) * time.Second
		}
		return true, after, err
	}
	return false, 0, err
}

// call sends req once by gRPC, as post does by HTTP.
func (e *logExporter) call(ctx context.Context, req *collogspb.ExportLogsServiceRequest) (retry bool, after time.Duration, err error) {
	if len(e.signal.Headers) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(e.signal.Headers))
	}
	if _, err := e.rpc.Export(ctx, req); err != nil {
		st := status.Convert(err)
		err = fmt.Errorf("otlp: exporting logs to %s: %w", e.signal.Endpoint, err)
		switch st.Code() {
		case codes.Canceled, codes.DeadlineExceeded:
			// Retry unless ctx is what ended it.
			return ctx.Err() == nil, 0, err
		case codes.Aborted, codes.OutOfRange, codes.Unavailable, codes.DataLoss:
			return true, retryDelay(st), err
		case codes.ResourceExhausted:
			// Retryable only when the collector says when.
			d := retryDelay(st)
			return d > 0, d, err
		}
		return false, 0, err
	}
	return false, 0, nil
}

// retryDelay is the delay st's RetryInfo asks for, 0 when it has none.
func retryDelay(st *status.Status) time.Duration {
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return max(ri.GetRetryDelay().AsDuration(), 0)
		}
	}
	return 0
}

// Shutdown stops Export sending anything: nothing is buffered, so there is
// nothing to flush. It returns ctx's error when ctx has ended.
func (e *logExporter) Shutdown(ctx context.Context) error {
	e.stopped.Store(true)
	return ctx.Err()
}

// ForceFlush returns ctx's error, if any: Export sends each batch before
// it returns, so nothing is held.
func (*logExporter) ForceFlush(ctx context.Context) error {
	return ctx.Err()
}

// request encodes records into one ExportLogsServiceRequest with the
// exporter's resource, a ScopeLogs for each instrumentation scope in the
// order they first appear.
func (e *logExporter) request(records []sdklog.Record) *collogspb.ExportLogsServiceRequest {
	type scopeKey struct {
		name, version, schema string
		attrs                 attribute.Distinct
	}
	var (
		scopes []*logspb.ScopeLogs
		index  = map[scopeKey]*logspb.ScopeLogs{}
	)
	for i := range records {
		r := &records[i]
		scope := r.InstrumentationScope()
		k := scopeKey{scope.Name, scope.Version, scope.SchemaURL, scope.Attributes.Equivalent()}
		sl, ok := index[k]
		if !ok {
			sl = &logspb.ScopeLogs{Scope: scopeOf(scope), SchemaUrl: scope.SchemaURL}
			index[k] = sl
			scopes = append(scopes, sl)
		}
		sl.LogRecords = append(sl.LogRecords, logRecord(r))
	}
	return &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  e.res,
		SchemaUrl: e.schema,
		ScopeLogs: scopes,
	}}}
}

// scopeOf encodes an instrumentation scope.
func scopeOf(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{
		Name:       s.Name,
		Version:    s.Version,
		Attributes: keyValues(s.Attributes.ToSlice()),
	}
}

// logRecord encodes one record.
func logRecord(r *sdklog.Record) *logspb.LogRecord {
	out := &logspb.LogRecord{
		TimeUnixNano:           unixNano(r.Timestamp()),
		ObservedTimeUnixNano:   unixNano(r.ObservedTimestamp()),
		EventName:              r.EventName(),
		SeverityNumber:         severity(r.Severity()),
		SeverityText:           r.SeverityText(),
		Body:                   anyValue(r.Body()),
		Attributes:             make([]*commonpb.KeyValue, 0, r.AttributesLen()),
		DroppedAttributesCount: clampUint32(r.DroppedAttributes()),
		Flags:                  uint32(r.TraceFlags()),
	}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		out.Attributes = append(out.Attributes, keyValue(kv))
		return true
	})
	if id := r.TraceID(); id.IsValid() {
		out.TraceId = id[:]
	}
	if id := r.SpanID(); id.IsValid() {
		out.SpanId = id[:]
	}
	return out
}

// severity encodes a severity: the API's numbers are the protocol's.
func severity(s log.Severity) logspb.SeverityNumber {
	if s < log.SeverityTrace1 || s > log.SeverityFatal4 {
		return logspb.SeverityNumber_SEVERITY_NUMBER_UNSPECIFIED
	}
	return logspb.SeverityNumber(s)
}

// unixNano is t in nanoseconds since the epoch, 0 for the zero time,
// which the protocol reads as unknown.
func unixNano(t time.Time) uint64 {
	if t.IsZero() || t.UnixNano() < 0 {
		return 0
	}
	return uint64(t.UnixNano())
}

// clampUint32 is n within uint32's range.
func clampUint32(n int) uint32 {
	return uint32(min(max(n, 0), math.MaxUint32)) //nolint:gosec // clamped to the range above.
}

// keyValues encodes attributes.
func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = keyValue(kv)
	}
	return out
}

// keyValue encodes one attribute.
func keyValue(kv attribute.KeyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)}
}

// anyValue encodes a value of every kind; an empty value is an AnyValue
// with none set, as the protocol has it.
func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return array(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
			Values: keyValues(v.AsMap()),
		}}}
	default:
		return &commonpb.AnyValue{}
	}
}

// array encodes a slice of values, each made a Value by value.
func array[T any](vs []T, value func(T) attribute.Value) *commonpb.AnyValue {
	out := make([]*commonpb.AnyValue, len(vs))
	for i, v := range vs {
		out[i] = anyValue(value(v))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: out}}}
}
