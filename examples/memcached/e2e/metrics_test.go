package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/internal/freeaddr"
	"github.com/loam-dev/loam/examples/internal/lockedbuffer"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

// reconcilesByController is the PromQL query the test asks Prometheus: each
// controller's reconciles so far, by the controller's name, as
// docs/kubernetes.md's "In Prometheus" names the series and the label.
const reconcilesByController = `sum by (loam_kube_controller_name) (loam_kube_controller_reconcile_duration_seconds_count)`

// The operator, run as command memcached runs it, with memcached.Operator's
// HostTelemetry and Init, serves /metrics on METRICS_ADDRESS; a real Prometheus
// scrapes it every second and answers a query with the Memcached
// controller's reconciles, and what it scrapes passes promtool's lint.
func TestMetrics_a_real_Prometheus_scrapes_the_operator_s_reconciles(t *testing.T) {
	prometheus, err := exec.LookPath("prometheus")
	require.NoError(t, err, "the test runs a real Prometheus: apt-get install --no-install-recommends prometheus")
	promtool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool comes with Debian's prometheus package")

	f := readRBAC(t)
	o, kubeconfig := newOperator(t, f, f.clusterRole.Rules, f.role.Rules)
	o.create(t, "cache", 1)
	metricsAddress := freeaddr.Loopback(t)
	o.startAsMain(t, f, kubeconfig, map[string]string{"METRICS_ADDRESS": metricsAddress})
	metricsURL := "http://" + metricsAddress + "/metrics"

	// The Memcached controller's first reconcile is counted once it ends.
	var body []byte
	wait.For(t, patience, func() bool {
		body, _ = get(t, metricsURL)
		return bytes.Contains(body, []byte(`loam_kube_controller_reconcile_duration_seconds_count{loam_kube_controller_name="memcached-controller"`))
	}, "/metrics never counted a reconcile of memcached-controller", o,
		wait.LastSeen(func() string { return string(body) }))

	// promtool reads the exposition on stdin and exits non-zero on a lint
	// problem as well as on a parse error.
	check := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	out, err := check.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)

	promAddress := startPrometheus(t, prometheus, metricsAddress)
	var got map[string]float64
	var last string
	wait.For(t, patience, func() bool {
		got, last = query(t, promAddress, reconcilesByController)
		return got["memcached-controller"] > 0
	}, "Prometheus never answered "+reconcilesByController+" with memcached-controller's reconciles", o,
		wait.LastSeen(func() string { return last }))
	require.Contains(t, got, "memcached-controller-budget", "Budget's controller is counted too")
}

// startAsMain runs the operator as start does, but as command memcached's
// main runs it: with memcached.Operator's Init and HostTelemetry, on the
// OS's network, with deployment.yaml's variables under vars. Its log
// records go to the App's stderr, which a failed wait reports.
func (o *operator) startAsMain(t *testing.T, f rbacObjects, kubeconfig []byte, vars map[string]string) {
	t.Helper()
	o.startAsMainOn(t, f, apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"kubeconfig": kubeconfig})), vars)
}

// startAsMainOn is startAsMain on h, whose file kubeconfig the operator
// connects with, and whose other files, such as a serving certificate,
// vars may name by h.Path.
func (o *operator) startAsMainOn(t *testing.T, f rbacObjects, h *apptest.Host, vars map[string]string) {
	t.Helper()
	env := operatorEnv(t, f, o.ns, podName)
	require.Equal(t, ":8080", env["METRICS_ADDRESS"], "deployment.yaml's METRICS_ADDRESS, which its metrics port names")
	env["MEMCACHED_KUBECONFIG"] = h.Path("kubeconfig")
	o.shards = shardsOf(t, env)
	op := memcached.NewOperator("memcached-operator")
	o.app = apptest.Start(t, op.Init,
		apptest.WithHost(h),
		apptest.WithEnv(env),
		apptest.WithEnv(vars),
		apptest.WithAppOptions(
			app.WithHost(app.Host{Network: app.OSHost().Network, FS: h.FS()}),
			app.WithHostTelemetry(op.HostTelemetry),
		),
	)
}

// get returns a GET of u's body and status code; a request that fails is
// status 0, for a wait to try again.
func get(t *testing.T, u string) ([]byte, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	// A client of its own, whose idle connections go with it: goleak
	// checks for their goroutines when the package's tests end.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return []byte(err.Error()), 0
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return []byte(err.Error()), 0
	}
	return b, resp.StatusCode
}

// child is a child process that a wait watches: done once it exits,
// reported by its output.
type child struct {
	done   chan struct{}
	err    error // cmd.Wait's, set before done is closed
	output lockedbuffer.Buffer
}

// Done is closed when the process has exited.
func (c *child) Done() <-chan struct{} { return c.done }

// Report is the process's exit, once it has exited, and its output.
func (c *child) Report() string {
	select {
	case <-c.done:
		return fmt.Sprintf("prometheus exited: %v\n%s", c.err, c.output.String())
	default:
		return "prometheus's output:\n" + c.output.String()
	}
}

// startPrometheus runs prometheus as a child process that scrapes target
// every second, with its storage in a temporary directory, and returns its
// web address once it is ready. The test's cleanup stops it.
func startPrometheus(t *testing.T, prometheus, target string) string {
	t.Helper()
	dir := t.TempDir()
	// The scrape timeout may not exceed the interval, and defaults to 10s.
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: memcached-operator
    static_configs:
      - targets: [%q]
`, target)
	configPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(configPath, []byte(config), 0o600))
	address := freeaddr.Loopback(t)

	c := &child{done: make(chan struct{})}
	cmd := exec.Command(prometheus,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+address,
	)
	cmd.Stdout = &c.output
	cmd.Stderr = &c.output
	require.NoError(t, cmd.Start())
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Log(c.Report())
		}
	})

	wait.For(t, patience, func() bool {
		_, code := get(t, "http://"+address+"/-/ready")
		return code == http.StatusOK
	}, "Prometheus never got ready", c)
	return address
}

// queryResponse is the part of Prometheus's /api/v1/query answer the test
// reads: an instant vector.
type queryResponse struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
	Error string `json:"error"`
}

// query asks the Prometheus at address for promql's instant vector and
// returns its samples by their loam_kube_controller_name, with the answer
// as it came for a failed wait's report.
func query(t *testing.T, address, promql string) (map[string]float64, string) {
	t.Helper()
	body, code := get(t, "http://"+address+"/api/v1/query?query="+url.QueryEscape(promql))
	if code != http.StatusOK {
		return nil, fmt.Sprintf("status %d: %s", code, body)
	}
	var r queryResponse
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	require.Equal(t, "success", r.Status, "%s", body)
	require.Equal(t, "vector", r.Data.ResultType, "%s", body)
	samples := map[string]float64{}
	for _, s := range r.Data.Result {
		v, ok := s.Value[1].(string)
		require.True(t, ok, "a sample's value is a string: %s", body)
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		require.NoError(t, err, "%s", body)
		samples[s.Metric["loam_kube_controller_name"]] = f
	}
	return samples, string(body)
}
