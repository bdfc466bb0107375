package otlptest_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/loam-dev/loam/examples/otlp/otlptest"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func traces(t *testing.T) []byte {
	t.Helper()
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "memcached-operator")}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "github.com/loam-dev/loam/kube"},
			Spans: []*tracepb.Span{{
				Name:    "reconcile Memcached",
				TraceId: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
				SpanId:  []byte{1, 2, 3, 4, 5, 6, 7, 8},
				Attributes: []*commonpb.KeyValue{
					str("loam.kube.object.name", "cache"),
					{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 3}}},
				},
			}},
		}},
	}}})
	require.NoError(t, err)
	return b
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

func TestReceiver(t *testing.T) {
	tests := []struct {
		name     string
		method   string
		path     string
		encoding string
		body     func(t *testing.T) []byte
		want     int
		spans    int
	}{
		{name: "a plain export", method: http.MethodPost, path: "/v1/traces", body: traces, want: http.StatusOK, spans: 1},
		{name: "a gzipped export", method: http.MethodPost, path: "/v1/traces", encoding: "gzip", body: func(t *testing.T) []byte { return gzipped(t, traces(t)) }, want: http.StatusOK, spans: 1},
		{name: "another path", method: http.MethodPost, path: "/v1/profiles", body: traces, want: http.StatusNotFound},
		{name: "a GET", method: http.MethodGet, path: "/v1/traces", body: func(*testing.T) []byte { return nil }, want: http.StatusMethodNotAllowed},
		{name: "not protobuf", method: http.MethodPost, path: "/v1/logs", body: func(*testing.T) []byte { return []byte("{}\xff") }, want: http.StatusBadRequest},
		{name: "an unknown encoding", method: http.MethodPost, path: "/v1/traces", encoding: "br", body: traces, want: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := otlptest.NewReceiver()
			req := httptest.NewRequestWithContext(t.Context(), tt.method, tt.path, bytes.NewReader(tt.body(t)))
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			require.Equal(t, tt.want, w.Code, w.Body.String())
			require.Len(t, r.Spans(), tt.spans)
			if tt.spans == 0 {
				require.Empty(t, r.Requests())
				return
			}
			require.Equal(t, "application/x-protobuf", w.Header().Get("Content-Type"))
			require.Equal(t, []otlptest.Span{{
				Resource:   map[string]any{"service.name": "memcached-operator"},
				Scope:      "github.com/loam-dev/loam/kube",
				Name:       "reconcile Memcached",
				TraceID:    "0102030405060708090a0b0c0d0e0f10",
				SpanID:     "0102030405060708",
				Attributes: map[string]any{"loam.kube.object.name": "cache", "n": int64(3)},
			}}, r.SpansNamed("reconcile Memcached"))
			require.Len(t, r.Requests(), 1)
		})
	}
}
