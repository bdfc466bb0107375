package events

import (
	"context"
	"encoding/json"

	"github.com/loam-dev/loam/ports"
)

// Objects is the ports.EventWriter of a controller of one kind's objects:
// it names each Event's object by the controller's API version and kind
// and the cached object's metadata, and writes it through a Writer.
type Objects struct {
	w                *Writer
	apiVersion, kind string
}

var _ ports.EventWriter = (*Objects)(nil)

// NewObjects returns the Objects of a controller of kind's objects, of
// apiVersion, such as cache.example.com/v1alpha1, writing as c says. It
// fails as New does.
func NewObjects(c Config, apiVersion, kind string) (*Objects, error) {
	w, err := New(c)
	if err != nil {
		return nil, err
	}
	return &Objects{w: w, apiVersion: apiVersion, kind: kind}, nil
}

// Record queues r about obj without blocking, as Writer.Record does.
func (o *Objects) Record(_ context.Context, obj ports.Object, r ports.EventRecord) {
	var doc struct {
		Metadata struct {
			Namespace, Name, ResourceVersion string
		}
	}
	// The cache's JSON is what the API server sent, so it decodes; were it
	// not to, the Event would lack the object's name, and the API server's
	// refusal would be logged as any failed write is.
	_ = json.Unmarshal(obj.JSON, &doc)
	m := doc.Metadata
	o.w.Record(eventOf(Regarding{
		APIVersion: o.apiVersion, Kind: o.kind,
		Namespace: m.Namespace, Name: m.Name, UID: obj.UID, ResourceVersion: m.ResourceVersion,
	}, r))
}

// eventOf returns the Event that records r about regarding.
func eventOf(regarding Regarding, r ports.EventRecord) Event {
	e := Event{Regarding: regarding, Type: r.Type, Reason: r.Reason, Action: r.Action, Note: r.Note}
	if rel := r.Related; rel != nil {
		e.Related = &Regarding{APIVersion: rel.APIVersion, Kind: rel.Kind, Namespace: rel.Namespace, Name: rel.Name, UID: rel.UID}
	}
	return e
}

// Start starts the Writer's goroutine, which Close stops.
func (o *Objects) Start() { o.w.Start() }

// Close stops the Writer's goroutine and writes what is queued within
// ctx, as Writer.Close does. It logs its failure as it does a failed
// write's, since a controller whose Serve returned on its own has no one
// to return it to, and returns it as well.
func (o *Objects) Close(ctx context.Context) error {
	err := o.w.Close(ctx)
	if err != nil {
		o.w.c.Logger.Error(err, "writing the controller's last events failed", "controller", o.w.c.Controller)
	}
	return err
}

// Dropped returns how many events Record dropped.
func (o *Objects) Dropped() int64 { return o.w.Dropped() }
