// Package eventstest is a fake of the Events kube.RecordEvent records,
// for a Reconciler's, KindReconciler's or Finalize's unit test: a Recorder
// hands out the context a Controller would, in which RecordEvent checks
// what it is given as it does in a Controller, and records into memory
// rather than to an API server.
//
//	rec := eventstest.New()
//	_, err := r.Reconcile(rec.Context(t, m), m)
//	require.Equal(t, []eventstest.Event{{...}}, rec.Events())
package eventstest

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/adapters/events"
	"github.com/loam-dev/loam/internal/eventctx"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/ports"
)

// Event is one Event RecordEvent recorded.
type Event struct {
	// Namespace, Name and UID are the object's the context was made for.
	Namespace, Name string
	UID             types.UID
	Type            kube.EventType
	// Action is Reconcile, Finalize, or what kube.Action named.
	Reason, Action, Note string
	// Related is what kube.Related named; nil for none.
	Related *kube.ObjectRef
}

// Recorder keeps in memory the Events recorded in its contexts. It is
// safe for concurrent use.
type Recorder struct {
	memory *events.Memory
}

// New returns a Recorder that has recorded nothing.
func New() *Recorder { return &Recorder{memory: &events.Memory{}} }

// Context returns t's context as a Controller hands it to a Reconciler of
// obj: RecordEvent in it records on obj into r. obj is what the
// Reconciler is handed, such as a kube.Object[Spec, Status] or a
// corev1.ConfigMap, whose metadata names it; the test fails at once when
// obj doesn't encode as an object.
func (r *Recorder) Context(t testing.TB, obj any) context.Context {
	t.Helper()
	return r.context(t, obj, "Reconcile")
}

// FinalizeContext returns t's context as a Controller hands it to a
// Finalize of obj, as Context does: the action of its Events is Finalize.
func (r *Recorder) FinalizeContext(t testing.TB, obj any) context.Context {
	t.Helper()
	return r.context(t, obj, "Finalize")
}

func (r *Recorder) context(t testing.TB, obj any, action string) context.Context {
	t.Helper()
	doc, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("eventstest: encoding the %T to record Events on: %v", obj, err)
	}
	var meta struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(doc, &meta); err != nil {
		t.Fatalf("eventstest: the %T to record Events on is not an object: %v", obj, err)
	}
	o := ports.Object{UID: meta.Metadata.UID, JSON: doc}
	return eventctx.With(t.Context(), eventctx.Mark{Events: r.memory, Object: o, Action: action})
}

// Events returns the Events recorded so far, the oldest first.
func (r *Recorder) Events() []Event {
	var out []Event
	for _, rec := range r.memory.Recorded() {
		var doc struct {
			Metadata struct{ Namespace, Name string }
		}
		// Context made the JSON, from an object that encoded.
		_ = json.Unmarshal(rec.Object.JSON, &doc)
		e := Event{
			Namespace: doc.Metadata.Namespace, Name: doc.Metadata.Name, UID: rec.Object.UID,
			Type: kube.EventType(rec.Record.Type), Reason: rec.Record.Reason, Action: rec.Record.Action, Note: rec.Record.Note,
		}
		if rel := rec.Record.Related; rel != nil {
			ref := kube.ObjectRef(*rel)
			e.Related = &ref
		}
		out = append(out, e)
	}
	return out
}
