package httpmetrics_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/httpmetrics"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// address is where the Service listens on a test Host's in-memory network.
const address = "metrics.test:8080"

// serve makes a Service of an Exporter read by a MeterProvider that has
// counted one request, serves it until the test ends, and returns a GET of
// a path, giving its status and body.
func serve(t *testing.T, host app.Host, pprof bool) func(path string) (int, string) {
	t.Helper()
	exp, err := httpmetrics.NewExporter()
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	c, err := mp.Meter("test").Int64Counter("test.requests")
	require.NoError(t, err)
	c.Add(t.Context(), 1)

	svc, err := httpmetrics.NewService(&app.Setup{Host: host, Telemetry: app.Telemetry{MeterProvider: mp}},
		httpmetrics.Settings{Address: address, Pprof: pprof}, exp)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx) }()
	client := &http.Client{Transport: &http.Transport{DialContext: host.Dial, DisableKeepAlives: true}}
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, svc.Shutdown(context.Background()))
	})
	return func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+address+path, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
}

func TestMetricsServesTheMeterProviderAndTheRuntime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		get := serve(t, apptest.NewHost(t).Host(), false)
		synctest.Wait()
		code, body := get("/metrics")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "\ntest_requests_total{")
		require.Contains(t, body, "\ngo_goroutines ")
		require.Contains(t, body, "\nprocess_start_time_seconds ")
	})
}

func TestPprofIsOffByDefault(t *testing.T) {
	for _, tt := range []struct {
		pprof bool
		code  int
	}{
		{false, http.StatusNotFound},
		{true, http.StatusOK},
	} {
		t.Run(map[bool]string{false: "off", true: "on"}[tt.pprof], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				get := serve(t, apptest.NewHost(t).Host(), tt.pprof)
				synctest.Wait()
				for _, path := range []string{"/debug/pprof/", "/debug/pprof/goroutine?debug=1", "/debug/pprof/cmdline"} {
					code, _ := get(path)
					require.Equal(t, tt.code, code, path)
				}
			})
		})
	}
}

func TestTheRegistryIsTheExportersOwn(t *testing.T) {
	exp, err := httpmetrics.NewExporter()
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	c, err := mp.Meter("test").Int64Counter("own.registry.only")
	require.NoError(t, err)
	c.Add(t.Context(), 1)

	mine, err := exp.Gatherer().Gather()
	require.NoError(t, err)
	require.True(t, hasFamily(mine, "own_registry_only_total"))
	// The test reads the default registry to prove it empty of ours.
	global, err := prometheus.DefaultGatherer.Gather() //nolint:forbidigo // proving nothing lands there
	require.NoError(t, err)
	require.False(t, hasFamily(global, "own_registry_only_total"), "nothing is registered on prometheus.DefaultRegisterer")

	// A second Exporter in the same process registers its collectors again
	// without colliding.
	_, err = httpmetrics.NewExporter()
	require.NoError(t, err)
}

// hasFamily reports whether families holds one named name.
func hasFamily(families []*dto.MetricFamily, name string) bool {
	for _, f := range families {
		if f.GetName() == name {
			return true
		}
	}
	return false
}

func TestNewServiceReportsEveryMistake(t *testing.T) {
	unread, err := httpmetrics.NewExporter()
	require.NoError(t, err)
	h := apptest.NewHost(t)
	_, err = httpmetrics.NewService(&app.Setup{Telemetry: app.Telemetry{MeterProvider: metricnoop.NewMeterProvider()}},
		httpmetrics.Settings{Address: "8080"}, unread)
	require.Error(t, err)
	for _, want := range []string{
		"httpmetrics: the Setup's Host has no Network to listen on",
		"httpmetrics: the Setup's Telemetry.MeterProvider is noop.MeterProvider, not an SDK *sdkmetric.MeterProvider",
		`httpmetrics: Settings.Address: address "8080" is not host:port`,
		"httpmetrics: the Exporter is read by no MeterProvider: pass it to sdkmetric.WithReader in the TelemetryBuilder: reader is not registered",
	} {
		require.Contains(t, err.Error(), want)
	}
	require.Len(t, strings.Split(err.Error(), "\n"), 4)

	tests := []struct {
		name  string
		setup *app.Setup
		exp   *httpmetrics.Exporter
		want  string
	}{
		{"nil Setup", nil, unread, "httpmetrics: nil Setup"},
		{"nil Exporter", &app.Setup{Host: h.Host(), Telemetry: app.Telemetry{MeterProvider: sdkmetric.NewMeterProvider()}}, nil, "httpmetrics: nil Exporter: make it with NewExporter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := httpmetrics.NewService(tt.setup, httpmetrics.Settings{Address: address}, tt.exp)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
