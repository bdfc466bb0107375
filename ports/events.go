package ports

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// The types of an Event, as events.k8s.io/v1 names them.
const (
	// EventNormal is an Event that reports nothing wrong.
	EventNormal = "Normal"
	// EventWarning is an Event that reports something wrong.
	EventWarning = "Warning"
)

// EventRecord is one occurrence for Events to record about an object.
type EventRecord struct {
	// Type is EventNormal or EventWarning.
	Type string
	// Reason is why the event happened, in CamelCase, such as
	// ReconcileFailed.
	Reason string
	// Action is what the controller was doing, in CamelCase, such as
	// Reconcile, Finalize or Scale.
	Action string
	// Note says what happened, for a human.
	Note string
	// Related is a second object the event concerns, such as the child
	// that a controller failed to create; nil for none.
	Related *EventObject
}

// EventObject names an object an Event is about, or related to.
type EventObject struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

// Events records Kubernetes Events about a controller's objects: the
// failed, timed-out and panicked reconciles the domain reports, and the
// events the end user's code records on the object it was handed.
type Events interface {
	// Record records r about obj, the object as the cache held it when
	// its pass began. It never blocks: the write is asynchronous, and a
	// failed write is the adapter's to report. ctx is the reconcile's.
	Record(ctx context.Context, obj Object, r EventRecord)
}
