// Package eventctx marks the context of one call of the end user's code —
// a reconcile or a Finalize — with the object it was handed and where its
// Events go, for kube.RecordEvent to read. A Controller sets the mark, as
// does kube/eventstest's fake for a unit test; it is internal, so no one
// else can.
package eventctx

import (
	"context"

	"github.com/loam-dev/loam/ports"
)

// Mark is what kube.RecordEvent records on: the object one call of the
// end user's code was handed, what it was doing, and where the Events go.
type Mark struct {
	Events ports.Events
	Object ports.Object
	// Action is the Events' action unless RecordEvent names one:
	// Reconcile or Finalize.
	Action string
}

// key is the context key of the Mark.
type key struct{}

// With returns ctx carrying m, or ctx itself when m has no Events.
func With(ctx context.Context, m Mark) context.Context {
	if m.Events == nil {
		return ctx
	}
	return context.WithValue(ctx, key{}, &m)
}

// From returns ctx's Mark, and false when ctx has none or is nil.
func From(ctx context.Context) (*Mark, bool) {
	if ctx == nil {
		return nil, false
	}
	m, ok := ctx.Value(key{}).(*Mark)
	return m, ok
}
