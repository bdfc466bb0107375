package events

import (
	"context"

	"github.com/loam-dev/loam/ports"
)

// Any writes Events about any object, each call naming its own: the
// Events a webhook or a Service records, outside a controller's passes.
// It writes through a Writer, so its Events are series, rate-limited and
// dropped as a controller's are.
type Any struct {
	w *Writer
}

// NewAny returns an Any writing as c says. It fails as New does.
func NewAny(c Config) (*Any, error) {
	w, err := New(c)
	if err != nil {
		return nil, err
	}
	return &Any{w: w}, nil
}

// Record queues r about regarding without blocking, as Writer.Record
// does. The first Record starts the Writer's goroutine, so an Any whose
// App never runs, or never records, has none to leak; Close stops it.
func (a *Any) Record(_ context.Context, regarding ports.EventObject, r ports.EventRecord) {
	a.w.Start()
	a.w.Record(eventOf(Regarding{
		APIVersion: regarding.APIVersion, Kind: regarding.Kind,
		Namespace: regarding.Namespace, Name: regarding.Name, UID: regarding.UID,
	}, r))
}

// Start starts the Writer's goroutine, which Close stops.
func (a *Any) Start() { a.w.Start() }

// Close stops the Writer's goroutine and writes what is queued within
// ctx, as Writer.Close does, logging its failure as Objects.Close does.
func (a *Any) Close(ctx context.Context) error {
	err := a.w.Close(ctx)
	if err != nil {
		a.w.c.Logger.Error(err, "writing the last events failed", "controller", a.w.c.Controller)
	}
	return err
}

// Dropped returns how many events Record dropped.
func (a *Any) Dropped() int64 { return a.w.Dropped() }
