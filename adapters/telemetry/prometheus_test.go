package telemetry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/require"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	lognoop "go.opentelemetry.io/otel/log/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/ports"
)

// exported is what a Prometheus scrape of the six instruments shows: each
// family's name and type, and the labels its series carry.
type exported struct {
	Type   dto.MetricType
	Labels []string
}

// scrape runs a Recorder and a real client-go work queue measured by it on
// a MeterProvider that exports through OpenTelemetry's Prometheus exporter
// to a private registry, through every instrument — a reconcile of each
// outcome, and a key through the queue — and returns what the registry
// gathers of the controller's families.
func scrape(t *testing.T) map[string]exported {
	t.Helper()
	return exportedOf(gather(t, false))
}

// gather runs what scrape does, with Config.ControllerRuntime set as cr,
// and returns every family the registry gathers.
func gather(t *testing.T, cr bool) []*dto.MetricFamily {
	t.Helper()
	var gathered []*dto.MetricFamily
	synctest.Test(t, func(t *testing.T) {
		registry := prometheus.NewRegistry()
		exporter, err := otelprometheus.New(
			otelprometheus.WithRegisterer(registry),
			otelprometheus.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		)
		require.NoError(t, err)
		meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
		t.Cleanup(func() { require.NoError(t, meters.Shutdown(context.Background())) })

		rec, err := telemetry.NewRecorder(telemetry.Config{
			Name:              controllerName,
			Kind:              kind,
			TracerProvider:    tracenoop.NewTracerProvider(),
			MeterProvider:     meters,
			LoggerProvider:    lognoop.NewLoggerProvider(),
			ControllerRuntime: cr,
			Workers:           3,
		})
		require.NoError(t, err)
		for _, r := range []ports.Report{
			{Outcome: ports.OutcomeSuccess, Duration: 20 * time.Millisecond},
			{Outcome: ports.OutcomeSuccess, After: time.Minute, Duration: 2 * time.Second},
			{Outcome: ports.OutcomeError, Err: errors.New("boom")},
			{Outcome: ports.OutcomePanic, Panic: &ports.Panic{Value: "boom"}},
			{Outcome: ports.OutcomeTimeout, Err: context.DeadlineExceeded, Timeout: time.Minute},
		} {
			ctx := rec.ReconcileStarted(context.Background(), namespaced)
			rec.ReconcileEnded(ctx, namespaced, r)
		}
		q := newQueue(t, rec)
		q.Add(namespaced)
		time.Sleep(time.Second)
		key, _ := q.Get()
		time.Sleep(time.Second)
		q.Done(key)
		// The queue sets its gauges on a tick of its own, loam's and then
		// controller-runtime's; a tick falls on this instant, so gathering
		// now could read between the two. Off the tick, both are set.
		time.Sleep(halfTick)

		gathered, err = registry.Gather()
		require.NoError(t, err)
	})
	return gathered
}

// exportedOf returns each family's type and labels.
func exportedOf(gathered []*dto.MetricFamily) map[string]exported {
	families := map[string]exported{}
	for _, f := range gathered {
		e := exported{Type: f.GetType()}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(e.Labels, l.GetName()) {
					e.Labels = append(e.Labels, l.GetName())
				}
			}
		}
		slices.Sort(e.Labels)
		families[f.GetName()] = e
	}
	return families
}

func TestThePrometheusNamesAreTheSpecs(t *testing.T) {
	families := scrape(t)
	delete(families, "target_info") // the resource's
	// The exporter adds the scope's name and version to every series.
	scope := []string{"otel_scope_name", "otel_scope_schema_url", "otel_scope_version"}
	name := slices.Sorted(slices.Values(append([]string{"loam_kube_controller_name"}, scope...)))
	withOutcome := slices.Sorted(slices.Values(append([]string{"loam_kube_controller_name", "loam_kube_controller_reconcile_outcome"}, scope...)))

	require.Equal(t, map[string]exported{
		"loam_kube_controller_queue_depth":                                   {dto.MetricType_GAUGE, name},
		"loam_kube_controller_queue_adds_total":                              {dto.MetricType_COUNTER, name},
		"loam_kube_controller_queue_duration_seconds":                        {dto.MetricType_HISTOGRAM, name},
		"loam_kube_controller_reconcile_duration_seconds":                    {dto.MetricType_HISTOGRAM, withOutcome},
		"loam_kube_controller_reconcile_unfinished_duration_seconds":         {dto.MetricType_GAUGE, name},
		"loam_kube_controller_reconcile_longest_unfinished_duration_seconds": {dto.MetricType_GAUGE, name},
	}, families)
}
