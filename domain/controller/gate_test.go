package controller_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/controller"
)

// gated returns a rig whose Controller waits for a Gate open, bounded by
// a minute, journaling "waiting" and "passed".
func gated(t *testing.T, open chan struct{}) *rig {
	var r *rig
	r = newRig(t, 1, func(c *controller.Config) {
		c.Gates = []controller.Gate{{
			Name: "webhooks", Open: open, Bound: time.Minute,
			Waiting: func() { r.j.add("waiting") },
			Passed:  func() { r.j.add("passed") },
		}}
	})
	return r
}

func TestServe_waits_for_its_Gate_before_its_first_check(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := make(chan struct{})
		r := gated(t, open)
		r.watching()
		ctx, stop := context.WithCancel(t.Context())
		r.serve(ctx)
		synctest.Wait()
		require.Equal(t, []string{"waiting"}, r.j.all(), "no check while the Gate is shut")

		time.Sleep(59 * time.Second)
		synctest.Wait()
		require.Equal(t, []string{"waiting"}, r.j.all(), "still waiting within the Bound")

		close(open)
		synctest.Wait()
		require.Equal(t, []string{"waiting", "check", "start"}, r.j.all(), "checks once the Gate opens, and never tells passed")

		stop()
		require.NoError(t, <-r.served)
	})
}

func TestServe_goes_on_once_its_Gates_Bound_passes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := gated(t, make(chan struct{}))
		r.watching()
		ctx, stop := context.WithCancel(t.Context())
		start := time.Now()
		r.serve(ctx)
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []string{"waiting", "passed", "check", "start"}, r.j.all())
		require.Equal(t, time.Minute, time.Since(start))

		stop()
		require.NoError(t, <-r.served)
	})
}

func TestServe_with_an_open_Gate_neither_waits_nor_tells(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := make(chan struct{})
		close(open)
		r := gated(t, open)
		r.watching()
		ctx, stop := context.WithCancel(t.Context())
		r.serve(ctx)
		synctest.Wait()
		require.Equal(t, []string{"check", "start"}, r.j.all())
		stop()
		require.NoError(t, <-r.served)
	})
}

func TestServe_stopped_while_it_waits_for_its_Gate_returns_nil_and_checks_nothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := gated(t, make(chan struct{}))
		// No Check or Start is expected, gomock fails on any; a Stop
		// withdraws what the Watch claimed.
		r.unstarted()
		ctx, stop := context.WithCancel(t.Context())
		r.serve(ctx)
		synctest.Wait()
		stop()
		require.NoError(t, <-r.served)
		require.Equal(t, []string{"waiting", "unhealthy"}, r.j.all())
		require.Zero(t, r.queues)
	})
}

func TestNew_names_each_Gate_mistake(t *testing.T) {
	_, err := controller.New(controller.Config{Name: "c", Gates: []controller.Gate{{Name: "webhooks"}}})
	require.ErrorContains(t, err, "controller c: Config.Gates[0] (webhooks): Open is nil")
	require.ErrorContains(t, err, "controller c: Config.Gates[0] (webhooks): Bound is 0s: want above zero")
}
