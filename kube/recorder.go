package kube

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	lognoop "go.opentelemetry.io/otel/log/noop"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"k8s.io/client-go/util/workqueue"

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
	logger   logr.Logger
	// unfenced records Lease timings that don't fence leadership.
	unfenced func(ctx context.Context, leaseDuration, renewDeadline, retryPeriod time.Duration)
}

// telemetryOf returns the telemetry of the Controller named name, of
// kind's objects, on s's providers. A provider a hand-built Setup left nil
// reports nothing, as app.Run's no-op defaults do.
func telemetryOf(s *app.Setup, name, kind string) (telemetry, error) {
	t := s.Telemetry
	c := reporting.Config{
		Name:           name,
		Kind:           kind,
		TracerProvider: t.TracerProvider,
		MeterProvider:  t.MeterProvider,
		LoggerProvider: t.LoggerProvider,
	}
	if c.TracerProvider == nil {
		c.TracerProvider = tracenoop.NewTracerProvider()
	}
	if c.MeterProvider == nil {
		c.MeterProvider = metricnoop.NewMeterProvider()
	}
	if c.LoggerProvider == nil {
		c.LoggerProvider = lognoop.NewLoggerProvider()
	}
	r, err := reporting.NewRecorder(c)
	if err != nil {
		return telemetry{}, err
	}
	return telemetry{recorder: r, metrics: r.QueueMetrics(), logger: r.Logger(), unfenced: r.LeaderElectionUnfenced}, nil
}
