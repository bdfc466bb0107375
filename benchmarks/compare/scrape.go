package compare

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The metric each controller counts its reconciles in, as its /metrics
// names it: loam's reconcile.duration histogram, whose count is every
// reconcile, and controller-runtime's counter.
const (
	loamReconciles = "loam_kube_controller_reconcile_duration_seconds"
	crReconciles   = "controller_runtime_reconcile_total"
)

// freeAddress returns a loopback host:port that nothing listened on a
// moment ago, for a child's metrics server: the child binds it, so the
// harness knows where to scrape without asking.
func freeAddress() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") //nolint:forbidigo // the harness is a program, not an App: it picks a loopback port for its child
	if err != nil {
		return "", fmt.Errorf("pick a port for the controller's metrics: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("pick a port for the controller's metrics: %w", err)
	}
	return addr, nil
}

// scrapeReconciles scrapes c's /metrics once and returns the reconciles it
// counted, summed over every series. It fails when /metrics doesn't
// answer, or has no such metric: the controller records nothing.
func scrapeReconciles(ctx context.Context, c *child) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	url := "http://" + c.metrics + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: scrape %s: %w", c.mode, url, err)
	}
	// One scrape: the connection closes with its answer, so no idle
	// connection outlives the child.
	req.Close = true
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: scrape %s: %w%s", c.mode, url, err, c.stderr.report())
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return 0, fmt.Errorf("%s: scrape %s: %s: %s", c.mode, url, resp.Status, body)
	}
	name := crReconciles
	if c.mode == Loam {
		name = loamReconciles
	}
	n, err := countIn(resp.Body, name)
	if err != nil {
		return 0, fmt.Errorf("%s: scrape %s: %w", c.mode, url, err)
	}
	return n, nil
}

// countIn reads metrics in Prometheus' text format from r and returns
// name's count summed over its series: a counter's value, a histogram's
// sample count. It fails when r has no such metric.
func countIn(r io.Reader, name string) (float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, fmt.Errorf("parse: %w", err)
	}
	f := families[name]
	if f == nil {
		return 0, fmt.Errorf("no metric %s among %d", name, len(families))
	}
	var n float64
	for _, m := range f.GetMetric() {
		switch {
		case m.GetHistogram() != nil:
			n += float64(m.GetHistogram().GetSampleCount())
		case m.GetCounter() != nil:
			n += m.GetCounter().GetValue()
		}
	}
	return n, nil
}
