package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

func TestJSONValue(t *testing.T) {
	tests := []struct {
		name  string
		value attribute.Value
		want  string
	}{
		{"empty", attribute.Value{}, `null`},
		{"bool", attribute.BoolValue(true), `true`},
		{"int", attribute.Int64Value(-7), `-7`},
		{"float", attribute.Float64Value(1.5), `1.5`},
		{"NaN", attribute.Float64Value(math.NaN()), `"NaN"`},
		{"+Inf", attribute.Float64Value(math.Inf(1)), `"Infinity"`},
		{"-Inf", attribute.Float64Value(math.Inf(-1)), `"-Infinity"`},
		{"string", attribute.StringValue("a \"quoted\"\nline"), `"a \"quoted\"\nline"`},
		{"bools", attribute.BoolSliceValue([]bool{true, false}), `[true,false]`},
		{"ints", attribute.Int64SliceValue([]int64{1, 2}), `[1,2]`},
		{"floats", attribute.Float64SliceValue([]float64{0.5, math.NaN()}), `[0.5,"NaN"]`},
		{"strings", attribute.StringSliceValue([]string{"a", "b"}), `["a","b"]`},
		{"bytes", attribute.ByteSliceValue([]byte("hi")), `"aGk="`},
		{"slice", attribute.SliceValue(attribute.IntValue(1), attribute.StringValue("x")), `[1,"x"]`},
		{"map", attribute.MapValue(attribute.String("k", "v"), attribute.Int("n", 2)), `{"k":"v","n":2}`},
		{"nested", attribute.MapValue(attribute.Slice("s", attribute.MapValue(attribute.Bool("b", true)))), `{"s":[{"b":true}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(jsonValue(tt.value))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestJSONLinesProcessor(t *testing.T) {
	var out bytes.Buffer
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(newJSONLines(&out)))
	logger := lp.Logger("scope")

	var r log.Record
	r.SetTimestamp(time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("CET", 3600)))
	r.SetSeverity(log.SeverityError2)
	r.SetSeverityText("CRITICAL")
	r.SetBody(attribute.StringValue("first"))
	logger.Emit(context.Background(), r)

	var untimed log.Record
	untimed.SetBody(attribute.IntValue(42))
	logger.Emit(context.Background(), untimed)

	require.NoError(t, lp.Shutdown(context.Background()))
	logger.Emit(context.Background(), r) // after Shutdown: nothing

	lines := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
	require.Len(t, lines, 2)
	require.JSONEq(t, `{"time":"2026-01-02T02:04:05.000000006Z","severity":"CRITICAL","scope":"scope","body":"first"}`, string(lines[0]),
		"the record's own severity text, and the time in UTC")

	var second jsonLine
	require.NoError(t, json.Unmarshal(lines[1], &second))
	require.Empty(t, second.Severity, "an undefined severity is left out")
	require.InDelta(t, 42, second.Body, 0)
	require.NotEqual(t, "0001-01-01T00:00:00Z", second.Time, "a record with no time has its observed time")
}

// BenchmarkJSONLines measures one record through the default
// LoggerProvider to its line: the cost of every record an App logs
// without a telemetry builder.
func BenchmarkJSONLines(b *testing.B) {
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(newJSONLines(io.Discard)))
	logger := lp.Logger("bench")
	var r log.Record
	r.SetSeverity(log.SeverityWarn)
	r.SetBody(attribute.StringValue("reconcile failed"))
	r.AddAttributes(
		attribute.String("k8s.namespace.name", "default"),
		attribute.String("loam.kube.object.name", "cache-1"),
		attribute.String("exception.message", "admission webhook denied the request"),
	)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r.SetTimestamp(time.Now())
		logger.Emit(ctx, r)
	}
}
