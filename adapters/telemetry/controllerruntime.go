package telemetry

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"k8s.io/client-go/util/workqueue"

	"github.com/loam-dev/loam/ports"
)

// The names controller-runtime gives what loam also measures, recorded
// beside loam's own when Config.ControllerRuntime is set. They are
// Prometheus names already: the exporter adds no suffix to a name that
// ends in its unit's or _total.
const (
	CRReconcileTotalName    = "controller_runtime_reconcile_total"
	CRReconcileErrorsName   = "controller_runtime_reconcile_errors_total"
	CRReconcilePanicsName   = "controller_runtime_reconcile_panics_total"
	CRReconcileTimeoutsName = "controller_runtime_reconcile_timeouts_total"
	CRReconcileTimeName     = "controller_runtime_reconcile_time_seconds"
	CRActiveWorkersName     = "controller_runtime_active_workers"
	CRMaxConcurrentName     = "controller_runtime_max_concurrent_reconciles"
	CRQueueDepthName        = "workqueue_depth"
	CRQueueAddsName         = "workqueue_adds_total"
	CRQueueDurationName     = "workqueue_queue_duration_seconds"
	CRUnfinishedWorkName    = "workqueue_unfinished_work_seconds"
	CRLongestRunningName    = "workqueue_longest_running_processor_seconds"
	crControllerKey         = attribute.Key("controller")
	crResultKey             = attribute.Key("result")
	crNameKey               = attribute.Key("name")
	crResultSuccess         = "success"
	crResultError           = "error"
	crResultRequeueAfter    = "requeue_after"
)

// CRReconcileTimeBoundaries returns controller_runtime_reconcile_time_seconds'
// bucket boundaries, controller-runtime's own. Each call returns a new
// slice.
func CRReconcileTimeBoundaries() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
		1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60}
}

// CRQueueDurationBoundaries returns workqueue_queue_duration_seconds'
// bucket boundaries, controller-runtime's own: ten nanoseconds to a
// thousand seconds, by tens. Each call returns a new slice.
func CRQueueDurationBoundaries() []float64 {
	b := make([]float64, 12)
	v := 10e-9
	for i := range b {
		b[i] = v
		v *= 10
	}
	return b
}

// crInstruments are controller-runtime's names for what a Recorder
// measures. A nil *crInstruments records nothing.
type crInstruments struct {
	reconciles metric.Int64Counter
	errors     metric.Int64Counter
	panics     metric.Int64Counter
	timeouts   metric.Int64Counter
	time       metric.Float64Histogram
	active     metric.Int64UpDownCounter
	workers    metric.Int64Gauge

	depth             metric.Int64Gauge
	adds              metric.Int64Counter
	queueDuration     metric.Float64Histogram
	unfinished        metric.Float64Gauge
	longestUnfinished metric.Float64Gauge

	// controller is {controller}; queue is {name, controller}, as
	// controller-runtime labels its work queue's; results holds
	// {controller, result} for each result.
	controller []metric.AddOption
	record     []metric.RecordOption
	queueAdd   []metric.AddOption
	queue      []metric.RecordOption
	results    map[string][]metric.AddOption

	mu    sync.Mutex
	count int64 // the depth summed over a sharded queue's shards
}

func newCRInstruments(meter metric.Meter, name string, workers int) (*crInstruments, error) {
	ctl := metric.WithAttributeSet(attribute.NewSet(crControllerKey.String(name)))
	q := metric.WithAttributeSet(attribute.NewSet(crNameKey.String(name), crControllerKey.String(name)))
	c := &crInstruments{
		controller: []metric.AddOption{ctl},
		record:     []metric.RecordOption{ctl},
		queueAdd:   []metric.AddOption{q},
		queue:      []metric.RecordOption{q},
		results:    map[string][]metric.AddOption{},
	}
	for _, r := range []string{crResultSuccess, crResultError, crResultRequeueAfter} {
		c.results[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(crControllerKey.String(name), crResultKey.String(r)))}
	}
	var err error
	for _, s := range []struct {
		into *metric.Int64Counter
		name string
		desc string
	}{
		{&c.reconciles, CRReconcileTotalName, "Total number of reconciliations per controller"},
		{&c.errors, CRReconcileErrorsName, "Total number of reconciliation errors per controller"},
		{&c.panics, CRReconcilePanicsName, "Total number of reconciliation panics per controller"},
		{&c.timeouts, CRReconcileTimeoutsName, "Total number of reconciliation timeouts per controller"},
		{&c.adds, CRQueueAddsName, "Total number of adds handled by workqueue"},
	} {
		if *s.into, err = meter.Int64Counter(s.name, metric.WithDescription(s.desc)); err != nil {
			return nil, fmt.Errorf("telemetry: instrument %s: %w", s.name, err)
		}
	}
	if c.time, err = meter.Float64Histogram(CRReconcileTimeName,
		metric.WithDescription("Length of time per reconciliation per controller"),
		metric.WithExplicitBucketBoundaries(CRReconcileTimeBoundaries()...)); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", CRReconcileTimeName, err)
	}
	if c.queueDuration, err = meter.Float64Histogram(CRQueueDurationName,
		metric.WithDescription("How long in seconds an item stays in workqueue before being requested"),
		metric.WithExplicitBucketBoundaries(CRQueueDurationBoundaries()...)); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", CRQueueDurationName, err)
	}
	if c.active, err = meter.Int64UpDownCounter(CRActiveWorkersName,
		metric.WithDescription("Number of currently used workers per controller")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", CRActiveWorkersName, err)
	}
	if c.workers, err = meter.Int64Gauge(CRMaxConcurrentName,
		metric.WithDescription("Maximum number of concurrent reconciles per controller")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", CRMaxConcurrentName, err)
	}
	if c.depth, err = meter.Int64Gauge(CRQueueDepthName,
		metric.WithDescription("Current depth of workqueue")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", CRQueueDepthName, err)
	}
	if c.unfinished, err = meter.Float64Gauge(CRUnfinishedWorkName,
		metric.WithDescription("How many seconds of work has been done that is in progress.")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", CRUnfinishedWorkName, err)
	}
	if c.longestUnfinished, err = meter.Float64Gauge(CRLongestRunningName,
		metric.WithDescription("How many seconds has the longest running processor for workqueue been running.")); err != nil {
		return nil, fmt.Errorf("telemetry: instrument %s: %w", CRLongestRunningName, err)
	}
	ctx := context.Background()
	c.workers.Record(ctx, int64(workers), c.record...)
	// An UpDownCounter shows once touched: a controller whose workers
	// never ran, a standby's, reads 0 as controller-runtime's does.
	c.active.Add(ctx, 0, c.controller...)
	return c, nil
}

// started counts a worker taken by a reconcile.
func (c *crInstruments) started(ctx context.Context) {
	if c == nil {
		return
	}
	c.active.Add(ctx, 1, c.controller...)
}

// ended records a reconcile that ended as report says, as
// controller-runtime would: a panic and a timeout are errors too, each
// also counted on its own, and a success that asked for another pass
// after a while is requeue_after. loam has no requeue without a delay, so
// that result stays at 0.
func (c *crInstruments) ended(ctx context.Context, report ports.Report) {
	if c == nil {
		return
	}
	c.active.Add(ctx, -1, c.controller...)
	c.time.Record(ctx, report.Duration.Seconds(), c.record...)
	result := crResultSuccess
	switch report.Outcome {
	case ports.OutcomeSuccess:
		if report.After > 0 {
			result = crResultRequeueAfter
		}
	case ports.OutcomePanic:
		c.panics.Add(ctx, 1, c.controller...)
		result = crResultError
	case ports.OutcomeTimeout:
		c.timeouts.Add(ctx, 1, c.controller...)
		result = crResultError
	default:
		result = crResultError
	}
	if result == crResultError {
		c.errors.Add(ctx, 1, c.controller...)
	}
	c.reconciles.Add(ctx, 1, c.results[result]...)
}

// moveDepth moves workqueue_depth by n; the lock keeps the gauge's last
// value the last count.
func (c *crInstruments) moveDepth(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count += n
	c.depth.Record(context.Background(), c.count, c.queue...)
}

// The work queue's metrics under both names: loam's, and, when cr is not
// nil, controller-runtime's.
type (
	crDepth struct {
		loam workqueue.GaugeMetric
		cr   *crInstruments
	}
	crCounter struct {
		loam workqueue.CounterMetric
		cr   *crInstruments
	}
	crHistogram struct {
		loam workqueue.HistogramMetric
		cr   *crInstruments
	}
	crGauge struct {
		loam  workqueue.SettableGaugeMetric
		gauge metric.Float64Gauge
		opts  []metric.RecordOption
	}
)

func (d crDepth) Inc() { d.loam.Inc(); d.cr.moveDepth(1) }
func (d crDepth) Dec() { d.loam.Dec(); d.cr.moveDepth(-1) }

func (a crCounter) Inc() {
	a.loam.Inc()
	a.cr.adds.Add(context.Background(), 1, a.cr.queueAdd...)
}

func (h crHistogram) Observe(seconds float64) {
	h.loam.Observe(seconds)
	h.cr.queueDuration.Record(context.Background(), seconds, h.cr.queue...)
}

func newCRGauge(loam workqueue.SettableGaugeMetric, g metric.Float64Gauge, opts []metric.RecordOption) crGauge {
	c := crGauge{loam: loam, gauge: g, opts: opts}
	g.Record(context.Background(), 0, opts...)
	return c
}

func (g crGauge) Set(seconds float64) {
	g.loam.Set(seconds)
	g.gauge.Record(context.Background(), seconds, g.opts...)
}
