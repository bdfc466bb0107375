package controller_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// "Controller.Serve first lists the resource, and each resource an Owns
// names, once, with a limit of 1. An error … ends Serve with an error that
// names the resource": the Watch lists (adapters/informer tests the limit
// and the name); Serve returns its error and starts nothing. It stops
// the Watch, once, which withdraws what it claimed of its Client's shared
// stores: else an Owns of the resource in another Controller would cache
// whole objects for a primary that never runs.
func TestServe_fails_with_the_Watch_s_check_and_starts_nothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		notServed := errors.New("listing cache.example.com/v1alpha1, Resource=memcacheds: the server could not find the requested resource")
		r.watch.EXPECT().Check(gomock.Any()).Return(notServed)
		// Stop once; no Start or WaitForSync: gomock fails on any.
		r.unstarted()

		err := r.ctrl.Serve(t.Context())

		require.ErrorIs(t, err, notServed)
		require.Zero(t, r.queues, "no work queue is made")
		require.Equal(t, []string{"unhealthy"}, r.j.all(), "no campaign, never ready")
	})
}

// "It then starts an informer on the resource, and one on each owned
// resource, …, waits for their caches to sync, and campaigns for the
// Lease." and Readiness: "unhealthy until the controller's caches have
// synced, and healthy from then until Serve returns".
func TestServe_watches_then_waits_for_the_caches_then_campaigns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.watching()
		ctx, stop := context.WithCancel(t.Context())
		r.serve(ctx)
		synctest.Wait()
		require.Equal(t, []string{"check", "start"}, r.j.all(), "no campaign before the caches sync, and not ready")

		close(r.synced)
		synctest.Wait()
		require.Equal(t, []string{"check", "start", "healthy", "campaign"}, r.j.all())

		stop()
		require.NoError(t, <-r.served)
		require.Equal(t, []string{"check", "start", "healthy", "campaign", "stop watching", "unhealthy"}, r.j.all(),
			"unhealthy once Serve returns; a standby has no Lease to release")
	})
}

// "The leader's workers then take keys from the work queue and reconcile
// them." and "Standbys keep their caches warm. Every replica lists and
// watches, and only the Lease's holder reconciles, so a new leader starts
// reconciling at once, with no list of its own to wait for."
func TestServe_a_standby_watches_and_reconciles_only_once_it_leads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.watching() // Check and Start once each: no list of the leader's own
		ctx, stop := context.WithCancel(t.Context())
		r.serve(ctx)
		close(r.synced)
		synctest.Wait()
		r.change("a", "b")
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Empty(t, r.handler.of("a"), "a standby reconciles nothing")
		require.Empty(t, r.handler.of("b"))

		close(r.elector.grant)
		synctest.Wait()
		require.Len(t, r.handler.of("a"), 1, "what the standby queued is reconciled as it leads")
		require.Len(t, r.handler.of("b"), 1)
		r.change("a")
		synctest.Wait()
		require.Len(t, r.handler.of("a"), 2, "and every change after")

		stop()
		require.NoError(t, <-r.served)
	})
}

// "SIGTERM releases the Lease. On Serve's context, …, the controller stops
// taking keys, and each worker finishes the reconcile it has in flight.
// Then it releases the Lease, …, stops its informers, and Serve returns
// nil" and "The backlog is left for the next leader. The work queue is shut
// down, never drained".
func TestServe_on_its_context_finishes_the_reconciles_in_flight_then_releases_the_Lease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)
		r.change("hold", "backlog")
		synctest.Wait()
		require.Len(t, r.handler.of("hold"), 1)

		stop()
		synctest.Wait()
		require.NotContains(t, r.j.all(), "release", "the Lease is held while a reconcile runs")
		close(r.handler.release)
		require.NoError(t, <-r.served)

		require.Equal(t, []error{nil}, r.handler.heldCauses(), "the reconcile in flight finished with its context alive")
		r.j.before(t, "reconciled hold", "release")
		r.j.before(t, "release", "stop watching")
		r.j.before(t, "stop watching", "unhealthy")
		require.Empty(t, r.handler.of("backlog"), "the backlog is left, never drained")
	})
}

// "A lost Lease exits 1. When the Lease's renewal fails for RenewDeadline,
// or another replica takes it, the controller stops taking keys, cancels
// the reconciles in flight, and Serve returns kube.ErrLostLeadership".
func TestServe_on_a_lost_Lease_cancels_the_reconciles_in_flight_and_returns_ErrLostLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.lead(t.Context())
		r.change("hold", "backlog")
		synctest.Wait()

		close(r.elector.take)
		err := <-r.served

		require.ErrorIs(t, err, controller.ErrLostLeadership)
		causes := r.handler.heldCauses()
		require.Len(t, causes, 1)
		require.ErrorIs(t, causes[0], controller.ErrLostLeadership, "the reconcile in flight is cancelled by the loss")
		require.Empty(t, r.handler.of("backlog"), "no key is taken once the Lease is lost")
		require.NotContains(t, r.j.all(), "release", "a lost Lease is not the replica's to release")
		r.j.before(t, "lost", "stop watching")
	})
}

// "A reconcile's context is cancelled only when Controller.Shutdown's
// context is done or the Lease is lost: then Shutdown cancels the
// reconciles in flight, waits for them, and returns an error that wraps
// the context's error."
func TestShutdown_cancels_the_reconciles_in_flight_when_its_context_ends_first(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.lead(t.Context())
		r.change("hold")
		synctest.Wait()

		grace, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		start := time.Now()
		err := r.ctrl.Shutdown(grace)

		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.EqualError(t, err, "controller memcached-controller: shutdown: context deadline exceeded")
		require.Equal(t, 20*time.Second, time.Since(start), "the reconcile had the whole grace period")
		causes := r.handler.heldCauses()
		require.Len(t, causes, 1)
		require.ErrorIs(t, causes[0], context.DeadlineExceeded, "cancelled with Shutdown's error as its cause")
		require.NoError(t, <-r.served, "Serve itself stopped as asked")
		require.Contains(t, r.j.all(), "release", "and released the Lease")
	})
}

func TestShutdown_stops_Serve_and_returns_nil_when_it_finishes_in_time(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.lead(t.Context())

		require.NoError(t, r.ctrl.Shutdown(t.Context()))
		require.NoError(t, <-r.served)
		r.j.before(t, "release", "stop watching")
	})
}

func TestShutdown_before_Serve_returns_at_once_and_Serve_then_returns_nil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.unstarted()
		require.NoError(t, r.ctrl.Shutdown(t.Context()))
		require.NoError(t, r.ctrl.Serve(t.Context()), "asked to stop before it started, Serve checks nothing")
		require.Equal(t, []string{"unhealthy"}, r.j.all())
	})
}

func TestShutdown_while_the_caches_sync_stops_Serve_before_it_campaigns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.watching()
		r.serve(t.Context())
		synctest.Wait()
		require.NoError(t, r.ctrl.Shutdown(t.Context()))
		require.NoError(t, <-r.served)
		require.NotContains(t, r.j.all(), "campaign")
	})
}

func TestServe_runs_once(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		r.unstarted()
		require.NoError(t, r.ctrl.Shutdown(t.Context()))
		require.NoError(t, r.ctrl.Serve(t.Context()))
		require.EqualError(t, r.ctrl.Serve(t.Context()), "controller memcached-controller: Serve was called again: a Controller serves once")
	})
}

// Settings.Workers: the leader runs that many reconciles at once.
func TestServe_runs_Workers_reconciles_at_once(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 3)
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)
		r.change("hold-1", "hold-2", "hold-3", "hold-4")
		synctest.Wait()
		require.Equal(t, 3, r.handler.maxInFlight(), "three workers, three reconciles at once")
		close(r.handler.release)
		synctest.Wait()
		require.Len(t, r.handler.of("hold-4"), 1, "the fourth once a worker was free")
		stop()
		require.NoError(t, <-r.served)
	})
}

// A panic in the end user's code is recovered, never retried, and the
// worker goes on with the other keys.
func TestServe_a_panicking_reconcile_is_never_retried_and_the_rest_go_on(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)
		r.change("panic", "a")
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Len(t, r.handler.of("panic"), 1, "never retried")
		require.Len(t, r.handler.of("a"), 1, "the worker went on")
		stop()
		require.NoError(t, <-r.served)
	})
}

// "After … reconciles it again after that long, unless it changes first":
// a change at 2s reconciles at once and leaves no trace of the first
// pass's timer.
func TestServe_a_change_cancels_a_pending_After(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)
		start := time.Now()
		r.change("after")
		time.Sleep(2 * time.Second)
		r.change("after")
		time.Sleep(10 * time.Second)
		synctest.Wait()
		stop()
		require.NoError(t, <-r.served)

		offset := start.Sub(r.handler.start)
		require.Equal(t, []time.Duration{offset, offset + 2*time.Second, offset + 8*time.Second}, r.handler.of("after"),
			"reconciled at 0s, on the change at 2s, and 6s after that: never at 6s")
	})
}

func TestServe_warns_when_the_Lease_timings_don_t_fence_leadership(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lease controller.Lease
		warns bool
	}{
		{"the defaults", fenced, false},
		{"LeaseDuration a second longer than RenewDeadline + RetryPeriod", controller.Lease{LeaseDuration: 13 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, false},
		{"LeaseDuration just longer than RenewDeadline + RetryPeriod, in the Lease's whole seconds equal", controller.Lease{LeaseDuration: 12*time.Second + 999*time.Millisecond, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, true},
		{"LeaseDuration equal to RenewDeadline + RetryPeriod", controller.Lease{LeaseDuration: 12 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mc := gomock.NewController(t)
				rec := portsmock.NewMockRecorder(mc)
				watch := portsmock.NewMockWatch(mc)
				ready := portsmock.NewMockReadiness(mc)
				ready.EXPECT().MarkUnhealthy()
				if tc.warns {
					rec.EXPECT().LeaderElectionUnfenced(gomock.Any(), tc.lease.LeaseDuration, tc.lease.RenewDeadline, tc.lease.RetryPeriod)
				}
				watch.EXPECT().Check(gomock.Any()).Return(errors.New("not served"))
				watch.EXPECT().Stop()
				ctrl, err := controller.New(controller.Config{
					Name: "c", Workers: 1, Watch: watch, NewQueue: func() ports.Queue { return newQueue() },
					Elector: &elector{}, Writer: portsmock.NewMockWriter(mc), Handler: &handler{}, Recorder: rec,
					Clock: bubbleClock{}, Ready: ready, Lease: tc.lease,
				})
				require.NoError(t, err)
				require.Error(t, ctrl.Serve(t.Context()))
			})
		})
	}
}

func TestNew_reports_every_missing_port(t *testing.T) {
	_, err := controller.New(controller.Config{Name: "c"})
	require.EqualError(t, err, "controller c: Config.Watch is nil\n"+
		"controller c: Config.NewQueue is nil\n"+
		"controller c: Config.Elector is nil\n"+
		"controller c: Config.Writer is nil\n"+
		"controller c: Config.Handler is nil\n"+
		"controller c: Config.Recorder is nil\n"+
		"controller c: Config.Clock is nil\n"+
		"controller c: Config.Ready is nil\n"+
		"controller c: Config.Workers is 0: want at least 1")
}
