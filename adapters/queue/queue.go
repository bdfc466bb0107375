// Package queue builds a controller's work queue: client-go's work queue
// of ports.Key, which holds each key once and never hands one key to two
// workers at once. The retries' and Afters' delays are the domain's own
// timers, which a change can cancel, so the queue delays nothing.
package queue

import (
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/loam-dev/loam/ports"
)

// Config is what New builds a queue from.
type Config struct {
	// Name names the queue, as the metrics its MetricsProvider makes are
	// labelled.
	Name string
	// Metrics makes the queue's metrics. Nil records none: the queue is
	// then left unnamed, which is how client-go's queue records nothing,
	// rather than falling back to client-go's process-wide provider.
	Metrics workqueue.MetricsProvider
	// Clock times the queue's metrics. Nil is the real clock.
	Clock clock.WithTicker
}

// New returns a running queue. With Metrics, client-go runs a goroutine
// that updates them until ShutDown, which its owner must call.
func New(c Config) workqueue.TypedInterface[ports.Key] {
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
	return workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[ports.Key]{
		Name:            name,
		MetricsProvider: c.Metrics,
		Clock:           clk,
	})
}
