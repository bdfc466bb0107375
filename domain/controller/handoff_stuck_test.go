package controller_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/ports"
)

// stubborn reconciles an object named "stuck…" until stuck is closed,
// ignoring its context, as a Reconciler blocked in a call without a
// deadline does; any other at once.
type stubborn struct{ stuck chan struct{} }

func (s stubborn) Reconcile(_ context.Context, obj ports.Object) (ports.Result, error) {
	if strings.HasPrefix(string(obj.UID), "stuck") {
		<-s.stuck
	}
	return ports.Result{}, nil
}

func (stubborn) Finalize(context.Context, ports.Object) error { return nil }

// withStubborn returns the option that gives a rig's Controller a stubborn
// Handler and a DrainTimeout of drain, and the function that lets the
// Handler's passes return, which a test may call any number of times.
func withStubborn(drain time.Duration) (release func(), with func(*controller.Config)) {
	stuck := stubborn{stuck: make(chan struct{})}
	return sync.OnceFunc(func() { close(stuck.stuck) }), func(c *controller.Config) {
		c.DrainTimeout = drain
		c.Handler = stuck
	}
}

// reportedOnceAfterGrace requires that a hand-off begun now, whose pass
// ignores its cancel at DrainTimeout drain, is not reported, and Stuck is
// nil, just before a RetryPeriod after drain, and that it is reported once
// at that RetryPeriod, its report left on reports.
func reportedOnceAfterGrace[T any](t *testing.T, r *rig, drain time.Duration, reports chan T) {
	t.Helper()
	time.Sleep(drain + fenced.RetryPeriod - time.Millisecond)
	synctest.Wait()
	require.Empty(t, reports, "reported before a RetryPeriod after DrainTimeout")
	require.NoError(t, r.ctrl.Stuck())
	time.Sleep(time.Millisecond)
	synctest.Wait()
	require.Len(t, reports, 1, "the stuck pass is reported once")
}

// TestShardedHandOffReportsAPassThatIgnoresItsContext: on a rebalance the
// shard stops admitting passes and DrainTimeout cancels the pass in flight,
// which ignores it. The replica keeps the shard's Lease while the pass
// runs (never two replicas at once), but a RetryPeriod after DrainTimeout
// it reports the pass, naming its key and how long it ran, and Stuck, the
// controller's liveness, fails until the pass returns, so the kubelet
// restarts the pod and frees the Lease. Once the pass returns, the shard
// is handed off and Stuck is nil again.
func TestShardedHandOffReportsAPassThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 20 * time.Second
		release, stubbornly := withStubborn(drain)
		srv := newLeaseServer(nil)
		r := newShardedRig(t, srv, 2, stubbornly)
		type report struct {
			key     ports.Key
			shard   int
			running time.Duration
		}
		reports := make(chan report, 4)
		r.rec.EXPECT().HandOffStuck(gomock.Any(), gomock.Any(), gomock.Any(), 2, gomock.Any()).Do(
			func(_ context.Context, key ports.Key, s, _ int, running time.Duration) {
				reports <- report{key: key, shard: s, running: running}
			}).AnyTimes()
		cancel := r.runSharded(t)
		defer cancel()
		// A failed assertion still lets the pass return, so Serve stops.
		defer release()
		r.change(objectOf("stuck", 1, 2))
		synctest.Wait()
		require.NoError(t, r.ctrl.Stuck(), "a pass in flight outside a hand-off is not stuck")

		// b joins: a must give shard 1 up.
		srv.set("member-b", "b_1", 2)
		synctest.Wait()
		handOff := time.Now()
		reportedOnceAfterGrace(t, r, drain, reports)
		got := <-reports
		require.Equal(t, 1, got.shard)
		require.True(t, strings.HasPrefix(got.key.Name, "stuck"), "the report names the stuck pass's key: %v", got.key)
		require.GreaterOrEqual(t, got.running, drain+fenced.RetryPeriod)
		err := r.ctrl.Stuck()
		require.Error(t, err, "the liveness check fails while the hand-off waits on the stuck pass")
		require.ErrorContains(t, err, "shard 1 of 2")
		require.ErrorContains(t, err, got.key.String())

		// However long it runs, the shard is never handed off meanwhile.
		time.Sleep(10 * fenced.LeaseDuration)
		synctest.Wait()
		require.Equal(t, "a_1", srv.holder("shard-1"),
			"shard 1 handed off %v after the hand-off began while its pass still ran", time.Since(handOff))
		require.Error(t, r.ctrl.Stuck())
		require.Empty(t, reports, "reported once, not again")

		release()
		synctest.Wait()
		require.NoError(t, r.ctrl.Stuck(), "healthy again once the pass returned")
		time.Sleep(fenced.LeaseDuration)
		synctest.Wait()
		require.NotEqual(t, "a_1", srv.holder("shard-1"), "the shard is handed off once the pass returned")
		r.stopServing(t, cancel)
	})
}

// TestShardedStopReportsAPassThatIgnoresItsContext: a stop (SIGTERM,
// Shutdown) hands off every shard at once, and its drain cancels the
// passes in flight at DrainTimeout; one that ignores the cancel keeps its
// shard's Lease for as long as it runs (safe), and is reported, once, a
// RetryPeriod after DrainTimeout, as a rebalance's hand-off reports it,
// and Stuck, the controller's liveness, fails until it returns. Before,
// only a rebalance's hand-off reported: a stop's drain never did, and
// Stuck stayed healthy.
func TestShardedStopReportsAPassThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 20 * time.Second
		release, stubbornly := withStubborn(drain)
		srv := newLeaseServer(nil)
		r := newShardedRig(t, srv, 2, stubbornly)
		var reports sync.Map
		r.rec.EXPECT().HandOffStuck(gomock.Any(), gomock.Any(), gomock.Any(), 2, gomock.Any()).Do(
			func(_ context.Context, key ports.Key, s, _ int, _ time.Duration) { reports.Store(key, s) }).AnyTimes()
		cancel := r.runSharded(t)
		defer cancel()
		defer release()
		r.change(objectOf("stuck", 1, 2))
		synctest.Wait()

		// The stop: the same hand-off, of every shard at once.
		cancel()
		synctest.Wait()
		time.Sleep(drain + fenced.RetryPeriod - time.Millisecond)
		synctest.Wait()
		require.NoError(t, r.ctrl.Stuck(), "stuck before a RetryPeriod after DrainTimeout")
		time.Sleep(time.Millisecond + time.Second)
		synctest.Wait()
		require.Equal(t, "a_1", srv.holder("shard-1"), "the Lease is kept while the pass runs (safe)")
		n := 0
		reports.Range(func(_, s any) bool {
			n++
			require.Equal(t, 1, s, "the report names the pass's shard")
			return true
		})
		stuckErr := r.ctrl.Stuck()
		release()
		synctest.Wait()
		require.NoError(t, <-r.served)
		require.Error(t, stuckErr,
			"Stuck (Controller.Live) is healthy %v after a stop's hand-off cancelled a pass that still runs", drain+fenced.RetryPeriod+time.Second)
		require.ErrorContains(t, stuckErr, "the stop's hand-off of its shards")
		require.Equal(t, 1, n, "the stuck pass is reported once by HandOffStuck")
		require.NoError(t, r.ctrl.Stuck(), "healthy again once the pass returned")
	})
}

// TestServe_on_its_context_reports_a_reconcile_that_ignores_its_cancel: an
// unsharded controller's stop drains its single Lease as a sharded one's
// shards: a reconcile that ignores the cancel at DrainTimeout keeps the
// Lease renewed while it runs, is reported once a RetryPeriod after, with
// shard 0 of 0 (no shards), and Stuck fails until it returns. Before, an
// unsharded controller had no stuck report at all.
func TestServe_on_its_context_reports_a_reconcile_that_ignores_its_cancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 20 * time.Second
		release, stubbornly := withStubborn(drain)
		r := newRig(t, 1, stubbornly)
		reports := make(chan time.Duration, 4)
		r.rec.EXPECT().HandOffStuck(gomock.Any(), ports.Key{Namespace: "ns", Name: "stuck"}, 0, 0, gomock.Any()).Do(
			func(_ context.Context, _ ports.Key, _, _ int, running time.Duration) { reports <- running }).AnyTimes()
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		defer release()
		r.lead(ctx)
		r.change("stuck")
		synctest.Wait()

		stop()
		reportedOnceAfterGrace(t, r, drain, reports)
		require.Equal(t, drain+fenced.RetryPeriod, <-reports)
		err := r.ctrl.Stuck()
		require.ErrorContains(t, err, "the stop's hand-off of its Lease")
		require.ErrorContains(t, err, "ns/stuck")

		time.Sleep(10 * fenced.LeaseDuration)
		synctest.Wait()
		require.NotContains(t, r.j.all(), "stop renewing", "the Lease is renewed while the reconcile runs")
		require.Empty(t, reports, "reported once, not again")
		release()
		require.NoError(t, <-r.served)
		require.NoError(t, r.ctrl.Stuck(), "healthy again once the reconcile returned")
	})
}
