// Package queue builds a controller's work queue: client-go's rate-limited
// work queue of ports.Key, which holds each key once and never hands one
// key to two workers at once, with its retries spaced by domain/backoff's
// policy.
package queue

import (
	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/ports"
)

// Config is what New builds a queue from.
type Config struct {
	// Name names the queue, as the metrics its MetricsProvider makes are
	// labelled.
	Name string
	// Policy spaces the retries of a key that failed.
	Policy backoff.Policy
	// Metrics makes the queue's metrics. Nil records none: the queue is
	// then left unnamed, which is how client-go's queue records nothing,
	// rather than falling back to client-go's process-wide provider.
	Metrics workqueue.MetricsProvider
	// Logger receives the queue's own log lines.
	Logger logr.Logger
	// Clock runs the queue's delays and the policy's token bucket. Nil is
	// the real clock.
	Clock clock.WithTicker
}

// New returns a running queue. Its delays run on a goroutine of its own
// until ShutDown, which its owner must call.
func New(c Config) workqueue.TypedRateLimitingInterface[ports.Key] {
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	name := c.Name
	if c.Metrics == nil {
		// client-go falls back to its global provider for a named queue
		// that has none: an unnamed queue records nothing instead.
		name = ""
	}
	logger := c.Logger
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[ports.Key]{
		Logger:          &logger,
		Name:            name,
		MetricsProvider: c.Metrics,
		Clock:           clk,
	})
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		backoff.NewLimiter[ports.Key](c.Policy, clk),
		workqueue.TypedRateLimitingQueueConfig[ports.Key]{
			Name:            name,
			MetricsProvider: c.Metrics,
			Clock:           clk,
			DelayingQueue:   delaying,
		},
	)
}
