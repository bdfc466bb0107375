package telemetry_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/httpmetrics"
	"github.com/loam-dev/loam/examples/telemetry"
)

func TestHostTelemetry_fails_naming_the_OTEL_variables(t *testing.T) {
	tests := []struct {
		name        string
		env         apptest.Env
		withoutHost bool // Telemetry, which has no Host
		want        string
	}{
		{
			name: "an unsupported and a bad variable",
			env:  apptest.Env{"OTEL_BSP_MAX_QUEUE_SIZE": "10", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/xml"},
			want: "config OTEL_BSP_MAX_QUEUE_SIZE: not supported: examples/otlp reads only the variables otlp.Variables lists\n" +
				`config OTEL_EXPORTER_OTLP_PROTOCOL: "http/xml" is not supported: only grpc, http/protobuf or http/json is`,
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
			b := telemetry.New("an-operator")
			p := app.Process{Environment: tt.env, Stderr: &bytes.Buffer{}}
			var err error
			if tt.withoutHost {
				_, _, err = b.Telemetry(t.Context(), p)
			} else {
				_, _, err = b.HostTelemetry(t.Context(), apptest.NewHost(t).Host(), p)
			}
			require.EqualError(t, err, tt.want)
			require.Nil(t, b.Exporter(), "Init gets no exporter from a failed build")
		})
	}
}

func TestHostTelemetry_names_the_OTEL_service_in_its_JSON_lines(t *testing.T) {
	var stderr bytes.Buffer
	b := telemetry.New("an-operator")
	tel, shutdown, err := b.HostTelemetry(t.Context(), apptest.NewHost(t).Host(),
		app.Process{Environment: apptest.Env{"OTEL_SERVICE_NAME": "an-operator-staging"}, Stderr: &stderr})
	require.NoError(t, err)
	require.Nil(t, tel.TracerProvider, "no endpoint: traces are the App's no-op")
	var r log.Record
	r.SetSeverity(log.SeverityInfo)
	r.SetBody(attribute.StringValue("hello"))
	tel.LoggerProvider.Logger("test").Emit(t.Context(), r)
	require.NoError(t, shutdown(t.Context()))
	require.Contains(t, stderr.String(), `"service":"an-operator-staging"`)
}

func TestTelemetry_builds_the_MeterProvider_its_exporter_reads(t *testing.T) {
	var stderr bytes.Buffer
	b := telemetry.New("an-operator")
	tel, shutdown, err := b.Telemetry(t.Context(), app.Process{Stderr: &stderr})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	require.NotNil(t, b.Exporter())

	// What an Init hands NewService: the Setup's MeterProvider must be one
	// the exporter reads, or NewService fails.
	_, err = httpmetrics.NewService(&app.Setup{Host: apptest.NewHost(t).Host(), Telemetry: tel},
		httpmetrics.Settings{Address: "127.0.0.1:0"}, b.Exporter())
	require.NoError(t, err)

	c, err := tel.MeterProvider.Meter("test").Int64Counter("test.reconciles")
	require.NoError(t, err)
	c.Add(t.Context(), 3)
	families, err := b.Exporter().Gatherer().Gather()
	require.NoError(t, err)
	var text strings.Builder
	for _, f := range families {
		_, err := expfmt.MetricFamilyToText(&text, f)
		require.NoError(t, err)
	}
	require.Contains(t, text.String(), "\ntest_reconciles_total{")
	require.Contains(t, text.String(), `target_info{service_name="an-operator"} 1`)
}

func TestHostTelemetry_serves_the_Process_resource_as_target_info(t *testing.T) {
	// The real environment's must not reach /metrics.
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "leak=yes")
	b := telemetry.New("an-operator")
	_, shutdown, err := b.HostTelemetry(t.Context(), apptest.NewHost(t).Host(), app.Process{
		Environment: apptest.Env{"OTEL_RESOURCE_ATTRIBUTES": "k8s.pod.name=p"},
		Stderr:      &bytes.Buffer{},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	families, err := b.Exporter().Gatherer().Gather()
	require.NoError(t, err)
	var text strings.Builder
	for _, f := range families {
		_, err := expfmt.MetricFamilyToText(&text, f)
		require.NoError(t, err)
	}
	require.Contains(t, text.String(), "\n"+`target_info{k8s_pod_name="p",service_name="an-operator"} 1`+"\n")
	require.NotContains(t, text.String(), "leak")
}
