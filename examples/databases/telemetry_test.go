package databases

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

func TestOperatorHostTelemetry_fails_naming_the_OTEL_variables(t *testing.T) {
	tests := []struct {
		name        string
		env         apptest.Env
		withoutHost bool // Telemetry, which has no Host
		want        string
	}{
		{
			name: "an unsupported and a bad variable",
			env:  apptest.Env{"OTEL_PROPAGATORS": "b3", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: "config OTEL_PROPAGATORS: not supported: examples/otlp reads only the variables otlp.Variables lists\n" +
				`config OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported: only http/protobuf is`,
		},
		{
			name:        "an endpoint without a Host",
			env:         apptest.Env{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
			withoutHost: true,
			want:        "otlp: the Host has no Network to dial the collector through: build the telemetry with app.WithHostTelemetry",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := NewOperator("databases-controller")
			p := app.Process{Environment: tt.env, Stderr: &bytes.Buffer{}}
			var err error
			if tt.withoutHost {
				_, _, err = op.Telemetry(t.Context(), p)
			} else {
				_, _, err = op.HostTelemetry(t.Context(), apptest.NewHost(t).Host(), p)
			}
			require.EqualError(t, err, tt.want)
			require.Nil(t, op.exporter, "Init gets no exporter from a failed build")
		})
	}
}

func TestOperatorHostTelemetry_names_the_OTEL_service_in_its_JSON_lines(t *testing.T) {
	var stderr bytes.Buffer
	op := NewOperator("databases-controller")
	tel, shutdown, err := op.HostTelemetry(t.Context(), apptest.NewHost(t).Host(),
		app.Process{Environment: apptest.Env{"OTEL_SERVICE_NAME": "databases-staging"}, Stderr: &stderr})
	require.NoError(t, err)
	require.Nil(t, tel.TracerProvider, "no endpoint: traces are the App's no-op")
	var r log.Record
	r.SetSeverity(log.SeverityInfo)
	r.SetBody(attribute.StringValue("hello"))
	tel.LoggerProvider.Logger("test").Emit(t.Context(), r)
	require.NoError(t, shutdown(t.Context()))
	require.Contains(t, stderr.String(), `"service":"databases-staging"`)
}
