package httpmetrics_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/loam-dev/loam/app/httpmetrics"
)

// info is the target_info family an Exporter serves: its HELP, its type,
// and each series' labels and value.
type info struct {
	help, kind string
	labels     []map[string]string
	values     []float64
}

// targetInfo returns the target_info family an Exporter made with opts
// serves once a MeterProvider built with res reads it.
func targetInfo(t *testing.T, res *resource.Resource, opts ...httpmetrics.ExporterOption) info {
	t.Helper()
	exp, err := httpmetrics.NewExporter(opts...)
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	families, err := exp.Gatherer().Gather()
	require.NoError(t, err)
	var got info
	for _, f := range families {
		if f.GetName() != "target_info" {
			continue
		}
		got.help, got.kind = f.GetHelp(), f.GetType().String()
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got.labels = append(got.labels, labels)
			got.values = append(got.values, m.GetGauge().GetValue())
		}
	}
	return got
}

func TestWithResourceTranslatesAsTheExporterDoes(t *testing.T) {
	// Nothing of the real environment's in either MeterProvider's resource.
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	res := resource.NewSchemaless(
		attribute.String("service.name", "an-operator"),
		attribute.String("k8s.pod.name", "p"),
		attribute.String("a-dash", "d"),
		attribute.String("a.dash", "e"), // translates to a_dash too: joined
		attribute.Int("replicas", 3),
		attribute.StringSlice("zones", []string{"a", "b"}),
	)
	own := targetInfo(t, res)
	require.Len(t, own.labels, 1)
	require.Equal(t, "p", own.labels[0]["k8s_pod_name"])
	require.Equal(t, "d;e", own.labels[0]["a_dash"])
	require.Equal(t, own, targetInfo(t, res, httpmetrics.WithResource(res)))
}

func TestWithResourceKeepsTheRealEnvironmentOut(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "leak=yes")
	t.Setenv("OTEL_SERVICE_NAME", "leaked")
	res := resource.NewSchemaless(
		attribute.String("service.name", "an-operator"),
		attribute.String("k8s.pod.name", "p"),
	)
	tests := []struct {
		name string
		opts []httpmetrics.ExporterOption
		want map[string]string
	}{
		{
			name: "WithResource: exactly its labels",
			opts: []httpmetrics.ExporterOption{httpmetrics.WithResource(res)},
			want: map[string]string{"k8s_pod_name": "p", "service_name": "an-operator"},
		},
		{
			// The SDK merges the environment's under the given resource,
			// whose service.name wins.
			name: "without: the exporter's own, the SDK's merge with the environment",
			want: map[string]string{"k8s_pod_name": "p", "leak": "yes", "service_name": "an-operator"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, info{
				help:   "Target metadata",
				kind:   "GAUGE",
				labels: []map[string]string{tt.want},
				values: []float64{1},
			}, targetInfo(t, res, tt.opts...))
		})
	}
}

func TestNewExporterReportsANilResource(t *testing.T) {
	_, err := httpmetrics.NewExporter(httpmetrics.WithResource(nil))
	require.EqualError(t, err, "httpmetrics: the exporter: WithResource: nil resource")
}
