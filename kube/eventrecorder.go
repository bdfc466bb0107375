package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"

	"github.com/loam-dev/loam/adapters/events"
	reporting "github.com/loam-dev/loam/adapters/telemetry"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/ports"
)

// EventRecorderSettings name who reports an EventRecorder's Events.
type EventRecorderSettings struct {
	// Name is the Events' reportingController, such as memcached-webhook:
	// what CheckName accepts.
	Name string
	// Instance is their reportingInstance: this replica, such as its
	// Pod's name, from 1 to 128 characters.
	Instance string
}

// EventRecorder records Events on any object, outside a reconcile: from a
// webhook's Admitter or a Service of the end user's own. Its Events are
// written as a Controller's are: repeats within six minutes are one
// series, whatever their notes; each object has a bucket of 25 Events,
// then one every five minutes; every write has a deadline; and what is
// dropped is counted in loam.kube.controller.events.dropped, with
// loam.kube.controller.name the Settings' Name.
//
// NewEventRecorder makes one; the App owns it: once every Service has
// stopped, the App writes the Events still queued and every series' count
// within the grace period, then the EventRecorder records no more.
type EventRecorder struct {
	events *events.Any
}

// NewEventRecorder returns an EventRecorder that writes through c's
// transport, reported as settings say, whose writing starts with its
// first Event and ends when the App stops, after its Services. It checks s, c and settings,
// and reports every mistake in one error.
func NewEventRecorder(s *app.Setup, c *Client, settings EventRecorderSettings) (*EventRecorder, error) {
	var errs []error
	if s == nil {
		errs = append(errs, errors.New("kube: NewEventRecorder: the Setup is nil"))
	}
	if c == nil {
		errs = append(errs, errors.New("kube: NewEventRecorder: the Client is nil"))
	}
	if err := CheckName(settings.Name); err != nil {
		errs = append(errs, fmt.Errorf("kube: NewEventRecorder: EventRecorderSettings.Name: %w", err))
	}
	if n := len(settings.Instance); n == 0 || n > MaxEventReason {
		errs = append(errs, fmt.Errorf("kube: NewEventRecorder: EventRecorderSettings.Instance %q is %d characters long: want from 1 to %d, such as the Pod's name", settings.Instance, n, MaxEventReason))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	client, err := eventsv1client.NewForConfig(c.Config())
	if err != nil {
		return nil, fmt.Errorf("kube: NewEventRecorder: the events client: %w", err)
	}
	meters := cmp.Or[metric.MeterProvider](s.Telemetry.MeterProvider, metricnoop.NewMeterProvider())
	a, err := events.NewAny(events.Config{
		Client: client, Controller: settings.Name, Instance: settings.Instance,
		Logger: reporting.NewLogger(loggerOf(s), attribute.String("loam.kube.controller.name", settings.Name)),
		Meter:  meters.Meter(ports.ScopeName),
	})
	if err != nil {
		return nil, fmt.Errorf("kube: NewEventRecorder: %w", err)
	}
	// The writing starts with the first Event, in the adapter: kube starts
	// no goroutine. The App's stop hooks run last registered first: this
	// one before the Client's, which closes the connections the last writes
	// need.
	s.OnStop(a.Close)
	return &EventRecorder{events: a}, nil
}

// Record records a Kubernetes Event of type typ, with reason and note, on
// regarding, as RecordEvent does inside a reconcile. opts must name the
// action with Action, such as Admit, which an Event outside a reconcile
// has no other way to know; Related names a second object.
//
// It checks regarding, whose APIVersion, Kind, Name and UID must be set,
// and the rest as RecordEvent does, and reports every mistake in one
// error, recording nothing then. Otherwise it returns nil at once: the
// write is asynchronous, and an API server that rejects it is logged,
// never returned. After the App stopped it records nothing, and counts
// the Event as dropped.
func (r *EventRecorder) Record(ctx context.Context, regarding ObjectRef, typ EventType, reason, note string, opts ...EventOption) error {
	rec, errs := checkEvent(typ, reason, note, "", opts)
	if err := checkObjectRef(regarding); err != nil {
		errs = append(errs, fmt.Errorf("regarding object %w", err))
	}
	if rec.Action == "" && !hasAction(opts) {
		errs = append(errs, errors.New(`action is not named: outside a reconcile, name it with kube.Action, such as kube.Action("Admit")`))
	}
	if r == nil || r.events == nil {
		errs = append(errs, errors.New("EventRecorder is not one NewEventRecorder returned"))
	}
	if err := joinEventMistakes("EventRecorder.Record", errs); err != nil {
		return err
	}
	r.events.Record(ctx, ports.EventObject(regarding), rec)
	return nil
}

// hasAction reports whether opts name an action, even a bad one, whose
// own mistake is reported.
func hasAction(opts []EventOption) bool {
	for _, o := range opts {
		if o.action != "" {
			return true
		}
	}
	return false
}
