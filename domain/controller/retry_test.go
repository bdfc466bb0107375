package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/controller"
)

// errUnreached is the API server's failure to call the App's own
// conversion webhook, which the rig's Gate retries; errOther is any
// other error of the check.
var (
	errUnreached = errors.New(`conversion webhook for cache.example.com/v1beta1, Kind=Memcached failed: Post "https://memcached-webhooks.memcached-system.svc:443/convert/cache.example.com/memcacheds?timeout=30s": connection refused`)
	errOther     = errors.New("the server could not find the requested resource")
)

// retried returns a rig whose Controller holds an open Gate, bounded by
// 30 seconds, that retries errUnreached, journaling each retry, and whose
// Watch's check fails with each of fails in turn, then passes.
func retried(t *testing.T, found bool, fails ...error) *rig {
	var r *rig
	open := make(chan struct{})
	close(open)
	gate := func() controller.Gate {
		return controller.Gate{
			Name: "the webhooks", Open: open, Bound: 30 * time.Second,
			Retries:  func(err error) bool { return errors.Is(err, errUnreached) },
			Retrying: func(try int, err error) { r.j.add(fmt.Sprintf("retry %d: %v", try, errors.Is(err, errUnreached))) },
		}
	}
	r = newRig(t, 1, func(c *controller.Config) {
		if found {
			c.FindGates = func() []controller.Gate { return []controller.Gate{gate()} }
		} else {
			c.Gates = []controller.Gate{gate()}
		}
	})
	for _, err := range fails {
		r.watch.EXPECT().Check(gomock.Any()).DoAndReturn(func(context.Context) error { r.j.add("check failed"); return err })
	}
	return r
}

func TestServe_retries_a_check_its_Gate_retries_until_it_passes(t *testing.T) {
	for _, found := range []bool{false, true} {
		t.Run(fmt.Sprintf("found=%v", found), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := retried(t, found, errUnreached, errUnreached, errUnreached)
				r.watching()
				ctx, stop := context.WithCancel(t.Context())
				start := time.Now()
				r.serve(ctx)
				synctest.Wait()
				time.Sleep(3 * time.Second)
				synctest.Wait()
				require.Equal(t, []string{
					"check failed", "retry 1: true", "check failed", "retry 2: true", "check failed", "retry 3: true",
					"check", "start",
				}, r.j.all())
				require.Equal(t, 3*controller.CheckRetryInterval, time.Since(start), "a try a second")
				stop()
				require.NoError(t, <-r.served)
			})
		})
	}
}

func TestServe_fails_once_its_Gates_Bound_of_retries_passes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fails := make([]error, 30)
		for i := range fails {
			fails[i] = errUnreached
		}
		r := retried(t, false, fails...)
		r.unstarted()
		start := time.Now()
		r.serve(t.Context())
		err := <-r.served
		require.ErrorIs(t, err, errUnreached)
		require.ErrorContains(t, err, "still failing after retrying for 29s, as the webhooks allows")
		require.Equal(t, 29*time.Second, time.Since(start), "no try starts a CheckRetryInterval or less before the Bound, from the first try")
		lines := r.j.all()
		require.Len(t, lines, 60, "30 checks and 29 retries: %q", lines)
		require.Equal(t, []string{"retry 29: true", "check failed", "unhealthy"}, lines[57:])
	})
}

func TestServe_fails_at_once_on_a_check_error_no_Gate_retries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := retried(t, false, errOther)
		r.unstarted()
		start := time.Now()
		r.serve(t.Context())
		require.ErrorIs(t, <-r.served, errOther)
		require.Zero(t, time.Since(start))
		require.Equal(t, []string{"check failed", "unhealthy"}, r.j.all(), "no retry")
	})
}

func TestServe_fails_on_another_error_while_it_retries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := retried(t, false, errUnreached, errOther)
		r.unstarted()
		r.serve(t.Context())
		err := <-r.served
		require.ErrorIs(t, err, errOther)
		require.False(t, strings.Contains(err.Error(), "retrying"), err.Error())
		require.Equal(t, []string{"check failed", "retry 1: true", "check failed", "unhealthy"}, r.j.all())
	})
}

func TestServe_stops_while_it_retries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := retried(t, false, errUnreached)
		r.unstarted()
		ctx, stop := context.WithCancel(t.Context())
		r.serve(ctx)
		synctest.Wait()
		stop()
		require.NoError(t, <-r.served, "a stop is no failure")
		require.Equal(t, []string{"check failed", "retry 1: true", "unhealthy"}, r.j.all(), "no start")
	})
}

func TestServe_waits_for_a_Gate_it_finds_when_it_starts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := make(chan struct{})
		calls := 0
		var r *rig
		r = newRig(t, 1, func(c *controller.Config) {
			c.FindGates = func() []controller.Gate {
				calls++
				return []controller.Gate{{Name: "webhooks", Open: open, Bound: time.Minute, Waiting: func() { r.j.add("waiting") }}}
			}
		})
		require.Zero(t, calls, "found when Serve starts, not before")
		r.watching()
		ctx, stop := context.WithCancel(t.Context())
		r.serve(ctx)
		synctest.Wait()
		require.Equal(t, []string{"waiting"}, r.j.all())
		close(open)
		synctest.Wait()
		require.Equal(t, []string{"waiting", "check", "start"}, r.j.all())
		require.Equal(t, 1, calls)
		stop()
		require.NoError(t, <-r.served)
	})
}

// A conversion webhook that hangs rather than refuses: each check takes
// 20 s to fail. The retries still end within the Gate's Bound (30 s) of
// the first try, rather than a check started just before the Bound
// running on past it.
func TestServe_cuts_a_hanging_retried_check_at_its_Gates_Bound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := retried(t, false)
		r.watch.EXPECT().Check(gomock.Any()).DoAndReturn(func(ctx context.Context) error {
			r.j.add("check")
			select {
			case <-time.After(20 * time.Second):
				return errUnreached
			case <-ctx.Done():
				return ctx.Err()
			}
		}).AnyTimes()
		r.unstarted()
		start := time.Now()
		r.serve(t.Context())
		err := <-r.served
		require.ErrorIs(t, err, errUnreached)
		require.ErrorContains(t, err, "still failing after retrying")
		require.Equal(t, 30*time.Second, time.Since(start), "the Bound, from the first try")
		require.Equal(t, []string{"check", "retry 1: true", "check", "unhealthy"}, r.j.all(), "the second try, at 21 s, cut at 30 s")
	})
}

// A conversion webhook that takes the request and never answers: the
// first try, which no Gate bounds since nothing yet says it is the
// webhook's, lasts until the API server gives up on the webhook (its
// ?timeout=30s). No try is left, and the error says so rather than
// speaking of a retry that never happened.
func TestServe_names_a_first_try_that_used_up_its_Gates_Bound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := retried(t, false)
		r.watch.EXPECT().Check(gomock.Any()).DoAndReturn(func(context.Context) error {
			r.j.add("check")
			time.Sleep(30 * time.Second)
			return errUnreached
		})
		r.unstarted()
		start := time.Now()
		r.serve(t.Context())
		err := <-r.served
		require.ErrorIs(t, err, errUnreached)
		require.ErrorContains(t, err, "(failing on its first try, which took 30s, leaving no retry within the 30s the webhooks allows)")
		require.NotContains(t, err.Error(), "retrying for")
		require.Equal(t, 30*time.Second, time.Since(start))
		require.Equal(t, []string{"check", "unhealthy"}, r.j.all())
	})
}
