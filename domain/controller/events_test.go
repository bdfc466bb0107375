package controller_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

// closeCall is one call of the EventWriter's Close: how long its context
// had left when it came, and whether it had one at all.
type closeCall struct {
	left     time.Duration
	deadline bool
}

// withEventWriter gives the rig's Controller an EventWriter that journals
// "events started" and "events closed", keeps each Close's call in closes,
// and closes as close does.
func withEventWriter(t *testing.T, r **rig, closes *[]closeCall, close func(context.Context) error) func(*controller.Config) {
	t.Helper()
	w := portsmock.NewMockEventWriter(gomock.NewController(t))
	w.EXPECT().Start().Do(func() { (*r).j.add("events started") })
	w.EXPECT().Close(gomock.Any()).DoAndReturn(func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		*closes = append(*closes, closeCall{left: time.Until(dl), deadline: ok})
		err := close(ctx)
		(*r).j.add("events closed")
		return err
	})
	return func(c *controller.Config) { c.EventWriter = w }
}

// newEventsRig returns a rig whose Controller has an EventWriter that
// closes as close does.
func newEventsRig(t *testing.T, closes *[]closeCall, close func(context.Context) error) *rig {
	t.Helper()
	var r *rig
	r = newRig(t, 1, withEventWriter(t, &r, closes, close))
	return r
}

func closed(context.Context) error { return nil }

// "Serve also runs the writer of the Controller's Events … when Serve
// returns without a Shutdown, it flushes them itself, for at most 5
// seconds": the writer starts before anything is checked, and is closed
// once the reconciles in flight finished, the Lease is released and the
// informers stopped.
func TestServe_that_returns_alone_closes_the_EventWriter_last_within_EventsFlushTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closes []closeCall
		r := newEventsRig(t, &closes, closed)
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)
		r.change("hold")
		synctest.Wait()

		stop()
		synctest.Wait()
		require.NotContains(t, r.j.all(), "events closed", "a pass in flight may still record an Event")
		close(r.handler.release)
		require.NoError(t, <-r.served)

		r.j.before(t, "events started", "check")
		r.j.before(t, "reconciled hold", "release")
		r.j.before(t, "release", "stop watching")
		r.j.before(t, "stop watching", "events closed")
		require.Equal(t, []closeCall{{left: controller.EventsFlushTimeout, deadline: true}}, closes)
	})
}

// An API server that doesn't answer holds a Serve that returns alone for
// EventsFlushTimeout, no longer, and the writer's failure is its own to
// report: Serve returns nil, as it stopped as asked.
func TestServe_that_returns_alone_waits_for_the_EventWriter_at_most_EventsFlushTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closes []closeCall
		r := newEventsRig(t, &closes, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		})
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)

		stop()
		start := time.Now()
		require.NoError(t, <-r.served)
		require.Equal(t, controller.EventsFlushTimeout, time.Since(start))
		require.Len(t, closes, 1)
	})
}

// "Shutdown … then writes the Events still queued, and the count of every
// series, within ctx": once, within Shutdown's context, after the Lease's
// release, and Shutdown returns the writer's failure.
func TestShutdown_closes_the_EventWriter_within_its_context_after_the_Lease_is_released(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closes []closeCall
		r := newEventsRig(t, &closes, func(context.Context) error { return errors.New("the API server refused") })
		r.lead(t.Context())

		grace, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		err := r.ctrl.Shutdown(grace)

		require.EqualError(t, err, "controller memcached-controller: writing its last events: the API server refused")
		require.NoError(t, <-r.served)
		r.j.before(t, "release", "stop watching")
		r.j.before(t, "stop watching", "events closed")
		require.Equal(t, []closeCall{{left: 30 * time.Second, deadline: true}}, closes, "within Shutdown's context, and Serve left it to Shutdown")
	})
}

// A Shutdown whose context ends first hands the writer back to Serve: a
// close within the ended context would write nothing of what is queued,
// the Warning Events of the very reconciles it cancelled among them, so
// Serve, once those have returned, closes it within EventsFlushTimeout of
// its own, as when it returns alone.
func TestShutdown_whose_context_ends_first_leaves_the_EventWriter_to_Serve_after_the_workers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closes []closeCall
		r := newEventsRig(t, &closes, func(ctx context.Context) error { return ctx.Err() })
		r.lead(t.Context())
		r.change("hold")
		synctest.Wait()

		grace, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		err := r.ctrl.Shutdown(grace)

		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.EqualError(t, err, "controller memcached-controller: shutdown: context deadline exceeded")
		require.NoError(t, <-r.served)
		r.j.before(t, "reconciled hold", "events closed")
		require.Equal(t, []closeCall{{left: controller.EventsFlushTimeout, deadline: true}}, closes,
			"once, by Serve, within its own bound: Shutdown's context had ended")
	})
}

// A Shutdown before Serve returns at once, closing nothing: Serve then
// starts the writer and, returning alone, closes it itself.
func TestShutdown_before_Serve_leaves_the_EventWriter_to_Serve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closes []closeCall
		r := newEventsRig(t, &closes, closed)
		r.unstarted()
		require.NoError(t, r.ctrl.Shutdown(t.Context()))
		require.Empty(t, closes)
		require.NoError(t, r.ctrl.Serve(t.Context()))
		require.Equal(t, []string{"events started", "unhealthy", "events closed"}, r.j.all())
		require.Equal(t, []closeCall{{left: controller.EventsFlushTimeout, deadline: true}}, closes)
	})
}

// A second Serve fails before it touches the writer, which the first
// started and closed once.
func TestServe_again_leaves_the_EventWriter_alone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closes []closeCall
		r := newEventsRig(t, &closes, closed)
		r.unstarted()
		require.NoError(t, r.ctrl.Shutdown(t.Context()))
		require.NoError(t, r.ctrl.Serve(t.Context()))
		require.Error(t, r.ctrl.Serve(t.Context()))
		require.Len(t, closes, 1)
	})
}

var _ ports.EventWriter = (*portsmock.MockEventWriter)(nil)
