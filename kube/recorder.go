package kube

import (
	"cmp"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/client-go/util/workqueue"

	"github.com/loam-dev/loam/adapters/queue"
	reporting "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/ports"
)

// telemetry is what a Controller reports through: the recorder of its
// reconciles, its work queue's metrics and the logger client-go's own
// records go to.
type telemetry struct {
	recorder ports.Recorder
	metrics  workqueue.MetricsProvider
	// shardedQueue returns the records of a sharded controller's queue's
	// keys, for a controller of count shards.
	shardedQueue func(count int) queue.Keys
	// sharded records that a sharded controller's replica, of count
	// shards, holds none yet.
	sharded func(count int)
	logger  logr.Logger
	// leaderStatus records leader_election_master_status, nil unless the
	// Setup asks for controller-runtime's metric names.
	leaderStatus metric.MeterProvider
	// meter makes the instruments of the Controller's other parts, such
	// as its Events' dropped counter, in the Recorder's scope.
	meter metric.Meter
}

// telemetryOf returns the telemetry of the Controller named name, of
// kind's objects, running workers workers, on s's providers, under the
// metric names s's Telemetry asks for. A provider a hand-built Setup left
// nil reports nothing, as app.Run's no-op defaults do.
func telemetryOf(s *app.Setup, name, kind string, workers int) (telemetry, error) {
	t := s.Telemetry
	meters := cmp.Or[metric.MeterProvider](t.MeterProvider, metricnoop.NewMeterProvider())
	r, err := reporting.NewRecorder(reporting.Config{
		Name:           name,
		Kind:           kind,
		TracerProvider: cmp.Or[trace.TracerProvider](t.TracerProvider, tracenoop.NewTracerProvider()),
		MeterProvider:  meters,
		LoggerProvider: cmp.Or[log.LoggerProvider](t.LoggerProvider, lognoop.NewLoggerProvider()),

		ControllerRuntime: t.MetricNames == app.MetricNamesControllerRuntime,
		Workers:           workers,
	})
	if err != nil {
		return telemetry{}, err
	}
	tel := telemetry{
		recorder: r, metrics: r.QueueMetrics(), logger: r.Logger(), meter: meters.Meter(ports.ScopeName),
		shardedQueue: func(count int) queue.Keys { return r.ShardedQueue(count) },
		sharded:      r.Sharded,
	}
	if t.MetricNames == app.MetricNamesControllerRuntime && t.MeterProvider != nil {
		tel.leaderStatus = t.MeterProvider
	}
	return tel, nil
}
