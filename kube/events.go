package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/loam-dev/loam/adapters/events"
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
// count in one Event's series, whatever resourceVersion the object had.
//
// It checks typ, which is Normal or Warning; reason, which is CamelCase:
// from 1 to 128 ASCII letters and digits, the first an upper-case letter,
// such as ConfigMapMissing; note, at most 1024 bytes, never cut; and ctx,
// which is a reconcile's or a Finalize's. It reports every mistake in one
// error, naming each bad value, and records nothing then. Otherwise it
// returns nil at once: the write is asynchronous, and an API server that
// rejects it is logged through the Controller's telemetry, never returned.
func RecordEvent(ctx context.Context, typ EventType, reason, note string) error {
	var errs []error
	if typ != Normal && typ != Warning {
		errs = append(errs, fmt.Errorf("kube: RecordEvent: the type %q is neither Normal nor Warning", typ))
	}
	if err := checkEventReason(reason); err != nil {
		errs = append(errs, fmt.Errorf("kube: RecordEvent: the reason %w", err))
	}
	if len(note) > MaxEventNote {
		errs = append(errs, fmt.Errorf("kube: RecordEvent: the note %.32q… is %d bytes long: an Event's note has at most %d", note, len(note), MaxEventNote))
	}
	var on *eventContext
	if ctx != nil {
		on, _ = ctx.Value(eventContextKey{}).(*eventContext)
	}
	if on == nil {
		errs = append(errs, errors.New("kube: RecordEvent: the context is not one a Controller handed a Reconciler, KindReconciler or Finalize, so there is no object to record the event on"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	on.events.Record(ctx, on.obj, ports.EventRecord{Type: string(typ), Reason: reason, Action: on.action, Note: note})
	return nil
}

// checkEventReason reports whether reason is an Event's reason: from 1
// to MaxEventReason ASCII letters and digits, the first an upper-case
// letter. Its error reads after "the reason".
func checkEventReason(reason string) error {
	switch {
	case reason == "":
		return errors.New("is empty: want CamelCase, such as ConfigMapMissing")
	case len(reason) > MaxEventReason:
		return fmt.Errorf("%.32q… is %d characters long: an Event's reason has at most %d", reason, len(reason), MaxEventReason)
	case reason[0] < 'A' || reason[0] > 'Z':
		return fmt.Errorf("%q does not start with an upper-case ASCII letter: want CamelCase, such as ConfigMapMissing", reason)
	}
	for i := range len(reason) {
		if c := reason[i]; !isASCIIAlphanumeric(c) {
			return fmt.Errorf("%q has %q at byte %d: want only ASCII letters and digits, CamelCase", reason, c, i)
		}
	}
	return nil
}

// isASCIIAlphanumeric reports whether c is an ASCII letter or digit.
func isASCIIAlphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// eventContextKey is the key of a reconcile's eventContext.
type eventContextKey struct{}

// eventContext is what RecordEvent records on: the object one call of
// the end user's code was handed, and what it was doing.
type eventContext struct {
	events ports.Events
	obj    ports.Object
	action string
}

// withEvents returns ctx carrying what RecordEvent needs to record on
// obj through e, or ctx itself when e is nil.
func withEvents(ctx context.Context, e ports.Events, obj ports.Object, action string) context.Context {
	if e == nil {
		return ctx
	}
	return context.WithValue(ctx, eventContextKey{}, &eventContext{events: e, obj: obj, action: action})
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
