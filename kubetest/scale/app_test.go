package scale

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// controllerConfig is the Controller an App runs.
type controllerConfig struct {
	name, namespace, identity string
	workers                   int
	owns                      bool
	lease                     leaseDurations
	tally                     *tally
	gate                      <-chan struct{}
	// telemetry, when set, is the App's instead of one that keeps its
	// metrics and log records in memory for the test to read.
	telemetry app.TelemetryBuilder
}

// controllerApp is an App that serves one Controller.
type controllerApp struct {
	*apptest.App
	network   *network
	telemetry *apptest.Telemetry
	ctrl      *kube.Controller
	// served is when Serve was called, in Unix nanoseconds.
	served atomic.Int64
}

// Report describes the App for a failed wait, with the records of its
// own Telemetry.
func (a *controllerApp) Report() string { return wait.Report("the App", a.App, a.telemetry) }

// startController runs an App whose Init builds a Client of conn and the
// Controller cfg describes, on a Host whose network the test can cut. Its
// Telemetry keeps metrics and log records in memory, and traces nothing:
// a span kept for each of tens of thousands of requests would weigh on
// what the harness measures.
func startController(t testing.TB, conn kube.Connection, cfg controllerConfig) *controllerApp {
	t.Helper()
	ca := &controllerApp{network: &network{}, telemetry: apptest.NewTelemetry()}
	tel := cfg.telemetry
	if tel == nil {
		tel = untraced(ca.telemetry)
	}
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, conn)
		if err != nil {
			return nil, err
		}
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		settings := kube.DefaultSettings()
		settings.Name = cfg.name
		settings.Namespace = cfg.namespace
		settings.Workers = cfg.workers
		settings.RetryMaxDelay = time.Second
		settings.LeaderElection.Namespace = cfg.namespace
		settings.LeaderElection.Identity = cfg.identity
		if cfg.lease.duration > 0 {
			settings.LeaderElection.LeaseDuration = cfg.lease.duration
			settings.LeaderElection.RenewDeadline = cfg.lease.renew
			settings.LeaderElection.RetryPeriod = cfg.lease.period
		}
		var parts []kube.Part
		if cfg.owns {
			parts = append(parts, kube.Owns(configMaps))
		}
		ctrl, err := kube.NewController(s, client, settings, resource,
			reconciler{kube: kc, tally: cfg.tally, gate: cfg.gate}, parts...)
		if err != nil {
			return nil, err
		}
		ca.ctrl = ctrl
		return []app.Service{timedService{Service: ctrl, served: &ca.served}}, nil
	}, apptest.WithAppOptions(
		app.WithHost(app.Host{Network: ca.network}),
		app.WithTelemetry(tel),
	))
	ca.App = a
	a.Setup() // Init has returned, so ctrl is set
	require.NotNil(t, ca.ctrl, "Init failed; stderr: %s", a.Stderr())
	return ca
}

// untraced builds an App's Telemetry from t's metrics and log records,
// with no tracing.
func untraced(t *apptest.Telemetry) app.TelemetryBuilder {
	return func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
		return app.Telemetry{
			MeterProvider:  t.MeterProvider,
			LoggerProvider: t.LoggerProvider,
			Propagator:     t.Propagator,
		}, t.Shutdown, nil
	}
}

// loamClients returns clients that reach the API server through a
// kube.Client of conn, as a Reconciler's do, in an App that serves
// nothing else until the test ends.
func loamClients(t testing.TB, conn kube.Connection) clients {
	t.Helper()
	var cl clients
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, conn)
		if err != nil {
			return nil, err
		}
		if cl.kube, err = kubernetes.NewForConfig(client.Config()); err != nil {
			return nil, err
		}
		if cl.dynamic, err = dynamic.NewForConfig(client.Config()); err != nil {
			return nil, err
		}
		return []app.Service{idle{}}, nil
	}, apptest.WithAppOptions(
		app.WithHost(app.Host{Network: &network{}}),
		app.WithTelemetry(untraced(apptest.NewTelemetry())),
	))
	a.Setup()
	require.NotNil(t, cl.dynamic, "Init failed; stderr: %s", a.Stderr())
	return cl
}

// idle is a Service that does nothing until it is stopped.
type idle struct{}

func (idle) Serve(ctx context.Context) error { <-ctx.Done(); return nil }

func (idle) Shutdown(context.Context) error { return nil }

// timedService notes when its Service's Serve is called.
type timedService struct {
	app.Service
	served *atomic.Int64
}

func (s timedService) Serve(ctx context.Context) error {
	s.served.Store(time.Now().UnixNano())
	return s.Service.Serve(ctx)
}

func (s timedService) String() string { return fmt.Sprint(s.Service) }

// servedAt returns when Serve was called, or the zero time.
func (a *controllerApp) servedAt() time.Time {
	if ns := a.served.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// waitSynced polls the Controller's Synced every millisecond and returns
// when it first said healthy. It fails the test when ctx ends or the App
// exits first.
func (a *controllerApp) waitSynced(ctx context.Context, t testing.TB) time.Time {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := a.ctrl.Synced().Healthy(ctx)
		require.NoError(t, err)
		if ok {
			return time.Now()
		}
		select {
		case <-tick.C:
		case <-a.Done():
			t.Fatalf("the App exited with %d before its caches synced; stderr: %s", a.Wait(), a.Stderr())
		case <-ctx.Done():
			t.Fatalf("the caches never synced: %v", context.Cause(ctx))
		}
	}
}

// recordTimes returns the times of the App's log records whose body is
// body.
func (a *controllerApp) recordTimes(body string) []time.Time {
	var times []time.Time
	for _, r := range a.telemetry.Records() {
		if r.Body().AsString() == body {
			times = append(times, r.Timestamp())
		}
	}
	return times
}

// histogram returns the data points of the App's histogram name, summed
// over their attributes.
func (a *controllerApp) histogram(t testing.TB, name string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, err := a.telemetry.Metric(t.Context(), name)
	require.NoError(t, err)
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a %T", name, m.Data)
	var sum metricdata.HistogramDataPoint[float64]
	for _, dp := range h.DataPoints {
		if sum.Bounds == nil {
			sum.Bounds = dp.Bounds
			sum.BucketCounts = make([]uint64, len(dp.BucketCounts))
		}
		sum.Count += dp.Count
		sum.Sum += dp.Sum
		for i, c := range dp.BucketCounts {
			sum.BucketCounts[i] += c
		}
	}
	return sum
}

// gauge returns the value of the App's int64 or float64 gauge name,
// summed over its attributes.
func (a *controllerApp) gauge(t testing.TB, name string) float64 {
	t.Helper()
	m, err := a.telemetry.Metric(t.Context(), name)
	require.NoError(t, err)
	var v float64
	switch g := m.Data.(type) {
	case metricdata.Gauge[int64]:
		for _, dp := range g.DataPoints {
			v += float64(dp.Value)
		}
	case metricdata.Gauge[float64]:
		for _, dp := range g.DataPoints {
			v += dp.Value
		}
	case metricdata.Sum[int64]:
		for _, dp := range g.DataPoints {
			v += float64(dp.Value)
		}
	default:
		t.Fatalf("%s is a %T", name, m.Data)
	}
	return v
}

// quantile returns the upper bound of the bucket where the q-quantile of
// h falls, an upper estimate, and whether it falls in the last bucket,
// which has no upper bound: then it returns that bucket's lower bound.
func quantile(h metricdata.HistogramDataPoint[float64], q float64) (bound float64, overflow bool) {
	if h.Count == 0 || len(h.Bounds) == 0 {
		return 0, false
	}
	want := uint64(q*float64(h.Count) + 0.5)
	var seen uint64
	for i, c := range h.BucketCounts {
		seen += c
		if seen >= want && i < len(h.Bounds) {
			return h.Bounds[i], false
		}
	}
	return h.Bounds[len(h.Bounds)-1], true
}
