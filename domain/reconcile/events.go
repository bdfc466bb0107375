package reconcile

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/loam-dev/loam/ports"
)

// The reasons of the Events a Loop records on an object whose pass went
// wrong.
const (
	// ReasonFailed is the reason of a pass that failed or timed out.
	ReasonFailed = "ReconcileFailed"
	// ReasonPanicked is the reason of a pass whose end user's code
	// panicked.
	ReasonPanicked = "ReconcilePanicked"
	// NoteLimit is the API server's bound on an Event's note, in bytes,
	// to which a Loop cuts the error it records.
	NoteLimit = 1024
)

// recordEvent records on obj the Warning Event of a pass over it that
// report says went wrong, when the Config has Events: the object's
// describe then says why it isn't converging without its logs.
func (l *Loop) recordEvent(ctx context.Context, obj ports.Object, step Step, report ports.Report) {
	if l.c.Events == nil {
		return
	}
	r := ports.EventRecord{Type: ports.EventWarning, Action: action(step)}
	switch report.Outcome {
	case ports.OutcomeError, ports.OutcomeTimeout:
		r.Reason, r.Note = ReasonFailed, report.Err.Error()
	case ports.OutcomePanic:
		r.Reason, r.Note = ReasonPanicked, fmt.Sprintf("panic: %v", report.Panic.Value)
	default:
		return
	}
	r.Note = cutNote(r.Note)
	l.c.Events.Record(ctx, obj, r)
}

// action names what a pass of step did, as an Event's action reads:
// Finalize, or Reconcile for every other step, adding the finalizer
// included.
func action(step Step) string {
	if step == StepFinalize {
		return "Finalize"
	}
	return "Reconcile"
}

// cutNote returns note cut to NoteLimit bytes at a UTF-8 character's
// boundary, since a cut character would be encoded longer than it was.
func cutNote(note string) string {
	if len(note) <= NoteLimit {
		return note
	}
	cut := NoteLimit
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut]
}
