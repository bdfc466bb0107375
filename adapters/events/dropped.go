package events

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// DroppedName is the counter of the events a Writer dropped, with the
// controller's name and the reason.
const DroppedName = "loam.kube.controller.events.dropped"

// The reasons an event is dropped: the values of DropReasonKey.
const (
	// DropRateLimited is an event whose object had no token left for a
	// new Event.
	DropRateLimited = "rate_limited"
	// DropQueueFull is an event that found the writer's buffer full.
	DropQueueFull = "queue_full"
	// DropWriteFailed is an occurrence the API server never got: its
	// write failed MaxAttempts times, was refused, or was left unwritten
	// at Close.
	DropWriteFailed = "write_failed"
	// DropClosed is an event recorded after Close.
	DropClosed = "closed"
)

// DropReasonKey is the attribute naming why an event was dropped.
const DropReasonKey = attribute.Key("loam.kube.controller.events.drop_reason")

// controllerNameKey is telemetry's ControllerNameKey, spelled again
// rather than imported: adapters don't lean on each other.
const controllerNameKey = attribute.Key("loam.kube.controller.name")

// droppedCounter counts dropped events in total, for Dropped, and by
// reason, through the meter.
type droppedCounter struct {
	total   atomic.Int64
	counter metric.Int64Counter
	by      map[string][]metric.AddOption
}

func newDroppedCounter(meter metric.Meter, controller string) (*droppedCounter, error) {
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("")
	}
	c, err := meter.Int64Counter(DroppedName,
		metric.WithUnit("{event}"),
		metric.WithDescription("The Kubernetes Events dropped rather than written, by reason."))
	if err != nil {
		return nil, fmt.Errorf("events: instrument %s: %w", DroppedName, err)
	}
	d := &droppedCounter{counter: c, by: map[string][]metric.AddOption{}}
	for _, r := range []string{DropRateLimited, DropQueueFull, DropWriteFailed, DropClosed} {
		d.by[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(controllerNameKey.String(controller), DropReasonKey.String(r)))}
	}
	return d, nil
}

func (d *droppedCounter) add(ctx context.Context, reason string, n int64) {
	if n <= 0 {
		return
	}
	d.total.Add(n)
	d.counter.Add(ctx, n, d.by[reason]...)
}
