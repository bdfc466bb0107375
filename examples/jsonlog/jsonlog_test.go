package jsonlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/examples/jsonlog"
)

func TestEachRecordIsOneJSONLine(t *testing.T) {
	traceID := trace.TraceID{1, 2, 3}
	spanCtx := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: trace.SpanID{4}})
	tests := []struct {
		name   string
		record func() log.Record
		traced bool
		want   map[string]any
	}{
		{
			name: "severity text and attributes",
			record: func() log.Record {
				var r log.Record
				r.SetTimestamp(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
				r.SetSeverity(log.SeverityWarn)
				r.SetSeverityText("WARN")
				r.SetBody(attribute.StringValue("reconcile failed"))
				r.AddAttributes(attribute.String("loam.kube.controller.name", "memcached"), attribute.Int("attempt", 2))
				return r
			},
			want: map[string]any{
				"time": "2026-01-02T03:04:05.000000006Z", "service": "svc", "severity": "WARN",
				"body": "reconcile failed", "attributes": map[string]any{"loam.kube.controller.name": "memcached", "attempt": "2"},
			},
		},
		{
			name: "severity from its number, with a trace",
			record: func() log.Record {
				var r log.Record
				r.SetTimestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
				r.SetSeverity(log.SeverityInfo)
				r.SetBody(attribute.StringValue("started"))
				return r
			},
			traced: true,
			want: map[string]any{
				"time": "2026-01-02T03:04:05Z", "service": "svc", "severity": "INFO",
				"body": "started", "trace_id": traceID.String(),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(jsonlog.New(&out, "svc")))
			t.Cleanup(func() { require.NoError(t, lp.Shutdown(context.Background())) })
			ctx := t.Context()
			if tt.traced {
				ctx = trace.ContextWithSpanContext(ctx, spanCtx)
			}
			lp.Logger("test").Emit(ctx, tt.record())

			require.Equal(t, 1, bytes.Count(out.Bytes(), []byte("\n")), out.String())
			var got map[string]any
			require.NoError(t, json.Unmarshal(out.Bytes(), &got))
			require.Equal(t, tt.want, got)
		})
	}
}
