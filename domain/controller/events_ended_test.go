package controller_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/ports"
)

// queuedWriter is an EventWriter as adapters/events' Writer behaves: a
// Close whose context has ended writes nothing of what is queued; a Close
// with a live context writes it all.
type queuedWriter struct {
	mu      sync.Mutex
	queued  int
	written int
}

func (w *queuedWriter) Record(context.Context, ports.Object, ports.EventRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queued++
}

func (*queuedWriter) Start() {}

func (w *queuedWriter) Close(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.written += w.queued
	w.queued = 0
	return nil
}

// A Shutdown whose context has already ended (an App's grace period run
// out) can't write anything within it: the Events still queued — the
// Warning Events of the very passes the Shutdown cancelled among them —
// are written by Serve, within EventsFlushTimeout of its own, once those
// passes have returned.
func TestShutdown_whose_context_ended_still_gets_the_queued_Events_written(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &queuedWriter{}
		r := newRig(t, 1, func(c *controller.Config) { c.EventWriter = w })
		r.lead(t.Context())
		r.change("hold")
		synctest.Wait()
		// What a pass recorded, still queued.
		w.Record(t.Context(), ports.Object{}, ports.EventRecord{Reason: "ReconcileFailed"})

		ended, cancel := context.WithCancel(t.Context())
		cancel()
		require.Error(t, r.ctrl.Shutdown(ended))
		require.NoError(t, <-r.served)

		w.mu.Lock()
		defer w.mu.Unlock()
		require.Equal(t, 1, w.written, "the queued Event was written by no one")
	})
}
