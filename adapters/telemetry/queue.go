package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"k8s.io/client-go/util/workqueue"
)

// queueInstruments are the five instruments client-go's work queue
// records through QueueMetrics.
type queueInstruments struct {
	depth             metric.Int64Gauge
	adds              metric.Int64Counter
	duration          metric.Float64Histogram
	unfinished        metric.Float64Gauge
	longestUnfinished metric.Float64Gauge
	// record and add hold every data point's attributes, the
	// controller's name, as the slices the instruments take, so a
	// measurement allocates nothing.
	record []metric.RecordOption
	add    []metric.AddOption
}

func newQueueInstruments(meter metric.Meter, name attribute.KeyValue) (queueInstruments, error) {
	attrs := metric.WithAttributeSet(attribute.NewSet(name))
	q := queueInstruments{record: []metric.RecordOption{attrs}, add: []metric.AddOption{attrs}}
	var err error
	if q.depth, err = meter.Int64Gauge(QueueDepthName,
		metric.WithUnit(unitKeys),
		metric.WithDescription("The keys waiting in the work queue.")); err != nil {
		return q, fmt.Errorf("telemetry: instrument %s: %w", QueueDepthName, err)
	}
	if q.adds, err = meter.Int64Counter(QueueAddsName,
		metric.WithUnit(unitKeys),
		metric.WithDescription("The keys added to the work queue.")); err != nil {
		return q, fmt.Errorf("telemetry: instrument %s: %w", QueueAddsName, err)
	}
	if q.duration, err = meter.Float64Histogram(QueueDurationName,
		metric.WithUnit(unitSeconds),
		metric.WithDescription("How long each key waited in the work queue before a worker took it."),
		metric.WithExplicitBucketBoundaries(DurationBoundaries()...)); err != nil {
		return q, fmt.Errorf("telemetry: instrument %s: %w", QueueDurationName, err)
	}
	if q.unfinished, err = meter.Float64Gauge(UnfinishedDurationName,
		metric.WithUnit(unitSeconds),
		metric.WithDescription("How long the reconciles in flight have run, summed.")); err != nil {
		return q, fmt.Errorf("telemetry: instrument %s: %w", UnfinishedDurationName, err)
	}
	if q.longestUnfinished, err = meter.Float64Gauge(LongestUnfinishedDurationName,
		metric.WithUnit(unitSeconds),
		metric.WithDescription("How long the longest reconcile in flight has run.")); err != nil {
		return q, fmt.Errorf("telemetry: instrument %s: %w", LongestUnfinishedDurationName, err)
	}
	return q, nil
}

// QueueMetrics returns the workqueue.MetricsProvider to set in the
// controller's work queue's config, in place of client-go's global one.
// The queue must be named, or client-go records nothing; the data points
// carry the Config's Name whatever the queue's name is.
//
// Each queue created with it starts its depth and its two gauges at 0, so
// a standby, whose queue fills but whose workers never run, reads 0 for
// them from the start. The queue's work duration and retries are not
// recorded.
func (r *Recorder) QueueMetrics() workqueue.MetricsProvider {
	return queueMetrics{q: r.queue, cr: r.cr}
}

// queueMetrics hands client-go's work queue its instruments, and
// controller-runtime's beside them when cr is not nil.
type queueMetrics struct {
	q  queueInstruments
	cr *crInstruments
}

var _ workqueue.MetricsProvider = queueMetrics{}

// NewDepthMetric returns queue.depth, at 0.
func (m queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric {
	d := &depthMetric{gauge: m.q.depth, opts: m.q.record}
	d.gauge.Record(context.Background(), 0, d.opts...)
	if m.cr != nil {
		m.cr.moveDepth(0)
		return crDepth{loam: d, cr: m.cr}
	}
	return d
}

// NewAddsMetric returns queue.adds.
func (m queueMetrics) NewAddsMetric(string) workqueue.CounterMetric {
	a := addsMetric{counter: m.q.adds, opts: m.q.add}
	if m.cr != nil {
		return crCounter{loam: a, cr: m.cr}
	}
	return a
}

// NewLatencyMetric returns queue.duration.
func (m queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric {
	h := histogramMetric{histogram: m.q.duration, opts: m.q.record}
	if m.cr != nil {
		return crHistogram{loam: h, cr: m.cr}
	}
	return h
}

// NewWorkDurationMetric returns a metric that records nothing:
// reconcile.duration times the same work, with its outcome.
func (queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noMetric{}
}

// NewUnfinishedWorkSecondsMetric returns reconcile.unfinished_duration, at
// 0.
func (m queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	g := newSecondsGauge(m.q.unfinished, m.q.record)
	if m.cr != nil {
		return newCRGauge(g, m.cr.unfinished, m.cr.queue)
	}
	return g
}

// NewLongestRunningProcessorSecondsMetric returns
// reconcile.longest_unfinished_duration, at 0.
func (m queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	g := newSecondsGauge(m.q.longestUnfinished, m.q.record)
	if m.cr != nil {
		return newCRGauge(g, m.cr.longestUnfinished, m.cr.queue)
	}
	return g
}

// NewRetriesMetric returns a metric that records nothing: the queue counts
// every AddAfter as a retry, so a Result.After would count as one; the
// error outcome of reconcile.duration counts the real retries.
func (queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric {
	return noMetric{}
}

// depthMetric is queue.depth. The queue moves it by one at a time, and an
// OpenTelemetry gauge is set, so it keeps the count itself; the lock
// keeps the gauge's last value the last count.
type depthMetric struct {
	gauge metric.Int64Gauge
	opts  []metric.RecordOption

	mu    sync.Mutex
	count int64
}

func (d *depthMetric) Inc() { d.add(1) }
func (d *depthMetric) Dec() { d.add(-1) }

func (d *depthMetric) add(n int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.count += n
	d.gauge.Record(context.Background(), d.count, d.opts...)
}

type addsMetric struct {
	counter metric.Int64Counter
	opts    []metric.AddOption
}

func (a addsMetric) Inc() { a.counter.Add(context.Background(), 1, a.opts...) }

type histogramMetric struct {
	histogram metric.Float64Histogram
	opts      []metric.RecordOption
}

func (h histogramMetric) Observe(seconds float64) {
	h.histogram.Record(context.Background(), seconds, h.opts...)
}

type secondsGauge struct {
	gauge metric.Float64Gauge
	opts  []metric.RecordOption
}

func newSecondsGauge(g metric.Float64Gauge, opts []metric.RecordOption) secondsGauge {
	s := secondsGauge{gauge: g, opts: opts}
	s.Set(0)
	return s
}

func (s secondsGauge) Set(seconds float64) { s.gauge.Record(context.Background(), seconds, s.opts...) }

// noMetric records nothing.
type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Observe(float64) {}

// ShardedQueue records the instruments of a sharded controller's queue
// that are about one key each, queue.depth, queue.adds and queue.duration,
// with the key's shard: queue.Config's Keys. Every data point carries
// loam.kube.controller.shard beside the controller's name, but that of a
// key whose shard the queue couldn't know (its object gone from the
// cache), which carries the name alone; summed over the shard, the figures
// are the controller's. A key's add is counted when it begins to wait.
type ShardedQueue struct {
	q  queueInstruments
	cr *crInstruments
	// record and add hold each shard's attributes; unknown is the last.
	record [][]metric.RecordOption
	add    [][]metric.AddOption

	mu    sync.Mutex
	depth []int64
}

// ShardedQueue returns the records of the keys of a queue of a controller
// with count shards, each shard's depth at 0, so that a standby's reads 0
// from the start.
func (r *Recorder) ShardedQueue(count int) *ShardedQueue {
	s := &ShardedQueue{q: r.queue, cr: r.cr, depth: make([]int64, count+1)}
	for i := range count {
		attrs := metric.WithAttributeSet(attribute.NewSet(r.name, ShardKey.Int(i)))
		s.record = append(s.record, []metric.RecordOption{attrs})
		s.add = append(s.add, []metric.AddOption{attrs})
	}
	s.record = append(s.record, r.queue.record)
	s.add = append(s.add, r.queue.add)
	for i := range count {
		s.q.depth.Record(context.Background(), 0, s.record[i]...)
	}
	if s.cr != nil {
		s.cr.moveDepth(0)
	}
	return s
}

// at returns the index of shard's attributes, and of the unknown shard's
// when ok is false or shard is out of range.
func (s *ShardedQueue) at(shard int, ok bool) int {
	if !ok || shard < 0 || shard >= len(s.depth)-1 {
		return len(s.depth) - 1
	}
	return shard
}

// Queued records a key of shard added, and waiting.
func (s *ShardedQueue) Queued(shard int, ok bool) {
	i := s.at(shard, ok)
	s.q.adds.Add(context.Background(), 1, s.add[i]...)
	s.moveDepth(i, 1)
	if s.cr != nil {
		s.cr.adds.Add(context.Background(), 1, s.cr.queueAdd...)
		s.cr.moveDepth(1)
	}
}

// Taken records a key of shard handed to a worker after waiting waited.
func (s *ShardedQueue) Taken(shard int, ok bool, waited time.Duration) {
	i := s.at(shard, ok)
	s.moveDepth(i, -1)
	s.q.duration.Record(context.Background(), waited.Seconds(), s.record[i]...)
	if s.cr != nil {
		s.cr.moveDepth(-1)
		s.cr.queueDuration.Record(context.Background(), waited.Seconds(), s.cr.queue...)
	}
}

// moveDepth moves the depth of the shard at i by n; the lock keeps each
// gauge's last value its last count.
func (s *ShardedQueue) moveDepth(i int, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.depth[i] += n
	s.q.depth.Record(context.Background(), s.depth[i], s.record[i]...)
}
