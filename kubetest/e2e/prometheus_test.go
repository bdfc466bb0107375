package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/require"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestController_instruments_reach_Prometheus_under_their_documented_names
// runs a whole App whose meter provider exports to Prometheus, on a
// registry of its own, and reads the six instruments back under the names
// and labels docs/kubernetes.md gives for PromQL.
func TestController_instruments_reach_Prometheus_under_their_documented_names(t *testing.T) {
	// Serial: reads process-wide metrics, which other tests change.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	newMemcached(t, admin.dynamic, r, ns, "metered", 1)

	registry := prometheus.NewRegistry() // never the default registerer
	exporter, err := otelprometheus.New(
		otelprometheus.WithRegisterer(registry),
		otelprometheus.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	require.NoError(t, err)
	metrics := func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
		return app.Telemetry{MeterProvider: mp}, mp.Shutdown, nil
	}

	var calls seen
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, c.Connection())
		if err != nil {
			return nil, err
		}
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		settings := settingsFor("metered-controller", ns, "pod-a")
		settings.Namespace = ns
		ctrl, err := kube.NewController(s, client, settings, r, memcachedReconciler{kube: kc, identity: "pod-a", seen: &calls},
			kube.Owns(deploymentsGVR))
		if err != nil {
			return nil, err
		}
		return []app.Service{ctrl}, nil
	}, apptest.WithAppOptions(app.WithHost(app.OSHost()), app.WithTelemetry(metrics)))
	a.Setup()

	wait.For(t, time.Minute, func() bool { _, ok := getDeployment(t, admin.kube, ns, "metered"); return ok }, "no Deployment")

	series := map[string]map[string]string{} // family name → the labels of its first series
	wait.For(t, time.Minute, func() bool {
		families, err := registry.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if len(f.GetMetric()) == 0 {
				continue
			}
			labels := map[string]string{}
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			series[f.GetName()] = labels
		}
		_, reconciled := series["loam_kube_controller_reconcile_duration_seconds"]
		return reconciled
	}, "no reconcile was measured")

	for _, name := range []string{
		"loam_kube_controller_queue_depth",
		"loam_kube_controller_queue_adds_total",
		"loam_kube_controller_queue_duration_seconds",
		"loam_kube_controller_reconcile_duration_seconds",
		"loam_kube_controller_reconcile_unfinished_duration_seconds",
		"loam_kube_controller_reconcile_longest_unfinished_duration_seconds",
	} {
		require.Contains(t, series, name)
		require.Equal(t, "metered-controller", series[name]["loam_kube_controller_name"], name)
	}
	require.Equal(t, "success", series["loam_kube_controller_reconcile_duration_seconds"]["loam_kube_controller_reconcile_outcome"])
}
