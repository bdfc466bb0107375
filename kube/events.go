package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/loam-dev/loam/adapters/events"
	"github.com/loam-dev/loam/internal/eventctx"
	"github.com/loam-dev/loam/ports"
)

// EventType is the type of a Kubernetes Event: Normal or Warning.
type EventType string

const (
	// Normal is an Event that reports nothing wrong, such as a child
	// created.
	Normal EventType = ports.EventNormal
	// Warning is an Event that reports something wrong, such as a
	// ConfigMap that the object names and that doesn't exist.
	Warning EventType = ports.EventWarning
)

// The API server's bounds on an Event's reason and note.
const (
	// MaxEventReason is the longest reason an Event can have, in
	// characters.
	MaxEventReason = 128
	// MaxEventNote is the longest note an Event can have, in bytes.
	MaxEventNote = events.NoteLimit
)

// The actions an Event records the controller was taking.
const (
	actionReconcile = "Reconcile"
	actionFinalize  = "Finalize"
)

// RecordEvent records a Kubernetes Event of type typ, with reason and
// note, on the object that the Reconciler, KindReconciler or Finalize
// whose context ctx is was handed, as `kubectl describe` shows it. The
// Event goes through the Controller's Client, reported by Settings.Name
// from LeaderElection.Identity; repeats of one Event within six minutes
// count in one Event's series, whatever resourceVersion the object had
// and whatever their notes, the latest of which the series keeps. Its
// action is Reconcile or Finalize unless opts name another with Action;
// Related names a second object. Outside a reconcile, an EventRecorder
// records; in a unit test, kube/eventstest's fake.
//
// It checks typ, which is Normal or Warning; reason, which is CamelCase:
// from 1 to 128 ASCII letters and digits, the first an upper-case letter,
// such as ConfigMapMissing; note, at most 1024 bytes, never cut; opts, as
// Related and Action say; and ctx, which is a reconcile's or a
// Finalize's. It reports every mistake in one error, naming each bad
// value, and records nothing then. Otherwise it returns nil at once: the
// write is asynchronous, and an API server that rejects it is logged
// through the Controller's telemetry, never returned.
func RecordEvent(ctx context.Context, typ EventType, reason, note string, opts ...EventOption) error {
	on, ok := eventctx.From(ctx)
	var action string
	if ok {
		action = on.Action
	}
	r, errs := checkEvent(typ, reason, note, action, opts)
	if !ok {
		errs = append(errs, errors.New("context is not one a Controller handed a Reconciler, KindReconciler or Finalize, so there is no object to record the event on"))
	}
	if err := joinEventMistakes("RecordEvent", errs); err != nil {
		return err
	}
	on.Events.Record(ctx, on.Object, r)
	return nil
}

// checkEvent returns the record of an Event of typ, reason and note, whose
// action is action unless opts name another, and every mistake in them,
// each after "the ".
func checkEvent(typ EventType, reason, note, action string, opts []EventOption) (ports.EventRecord, []error) {
	var errs []error
	if typ != Normal && typ != Warning {
		errs = append(errs, fmt.Errorf("type %q is neither Normal nor Warning", typ))
	}
	if err := checkEventReason(reason); err != nil {
		errs = append(errs, fmt.Errorf("reason %w", err))
	}
	if len(note) > MaxEventNote {
		errs = append(errs, fmt.Errorf("note %.32q… is %d bytes long: an Event's note has at most %d", note, len(note), MaxEventNote))
	}
	r, more := applyEventOptions(ports.EventRecord{Type: string(typ), Reason: reason, Action: action, Note: note}, opts)
	return r, append(errs, more...)
}

// joinEventMistakes returns errs as one error of the function named
// name, each line read after "the ", or nil when there are none.
func joinEventMistakes(name string, errs []error) error {
	for i, err := range errs {
		errs[i] = fmt.Errorf("kube: %s: the %w", name, err)
	}
	return errors.Join(errs...)
}

// withEvents returns ctx carrying what RecordEvent needs to record on
// obj through e, or ctx itself when e is nil.
func withEvents(ctx context.Context, e ports.Events, obj ports.Object, action string) context.Context {
	return eventctx.With(ctx, eventctx.Mark{Events: e, Object: obj, Action: action})
}

// controllerEvents is how a Controller records Events.
type controllerEvents struct {
	// writer writes them: nil records none.
	writer ports.EventWriter
	// failures records the failed, timed-out and panicked passes: nil
	// when Settings.FailureEvents is off, or there is no writer.
	failures ports.Events
	// handler is the Controller's Handler, whose calls' contexts carry
	// the object for RecordEvent when there is a writer.
	handler ports.Handler
}

// eventsOf returns how a Controller of t's objects, handled by h, records
// Events on cl's events client: through nothing, and h as it is, when cl
// has none.
func eventsOf(cl clients, settings Settings, t target, tel telemetry, h ports.Handler) (controllerEvents, error) {
	if cl.events == nil {
		return controllerEvents{handler: h}, nil
	}
	w, err := events.NewObjects(events.Config{
		Client: cl.events, Controller: settings.Name, Instance: settings.LeaderElection.Identity, Logger: tel.logger,
		Meter: tel.meter,
	}, t.gvr.GroupVersion().String(), t.kind)
	if err != nil {
		return controllerEvents{}, fmt.Errorf("kube: the events writer: %w", err)
	}
	ev := controllerEvents{writer: w, handler: h}
	if eh, ok := h.(eventsHandler); ok {
		ev.handler = eh.recordingOn(w)
	}
	if settings.FailureEvents == FailureEventsOn {
		ev.failures = w
	}
	return ev, nil
}

// eventsHandler is a Handler whose calls' contexts can carry the object
// for RecordEvent: kube's handler.
type eventsHandler interface {
	ports.Handler
	recordingOn(e ports.Events) ports.Handler
}
