package controller_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/ports"
)

// TestReview_Stuck_a_pass_that_ignores_its_cancel_at_a_stop_is_never_reported:
// REVIEW: the hand-off of every held shard at a stop (SIGTERM, Shutdown)
// goes through sharded.end(false) → crew.drain, which cancels the passes
// with ErrDrainTimeout at DrainTimeout and then waits for them with no
// grace, no HandOffStuck record and no Stuck: only a rebalance's handOff
// reports. A pass that ignores the cancel keeps Serve, and every shard's
// Lease, for as long as it runs (safe), but the ERROR record the docs
// promise ("a pass stuck in a hand-off is reported") is never sent and
// Controller.Live stays healthy. Under SIGTERM the kubelet's grace period
// ends it anyway; under kube.Controller.Shutdown in a process that goes on
// (another controller in the same App) nothing ever does, and nothing says
// why the shards are neither reconciled nor released.
func TestReview_Stuck_a_pass_that_ignores_its_cancel_at_a_stop_is_never_reported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 20 * time.Second
		stuck := stubborn{stuck: make(chan struct{})}
		srv := newLeaseServer(nil)
		r := newShardedRig(t, srv, 2, func(c *controller.Config) {
			c.DrainTimeout = drain
			c.Handler = stuck
		})
		var reports sync.Map
		r.rec.EXPECT().HandOffStuck(gomock.Any(), gomock.Any(), gomock.Any(), 2, gomock.Any()).Do(
			func(_ context.Context, key ports.Key, s, _ int, _ time.Duration) { reports.Store(key, s) }).AnyTimes()
		cancel := r.runSharded(t)
		defer cancel()
		release := sync.OnceFunc(func() { close(stuck.stuck) })
		defer release()
		r.change(objectOf("stuck", 1, 2))
		synctest.Wait()

		// The stop: the same hand-off, of every shard at once.
		cancel()
		synctest.Wait()
		time.Sleep(drain + fenced.RetryPeriod + time.Second)
		synctest.Wait()
		require.Equal(t, "a_1", srv.holder("shard-1"), "the Lease is kept while the pass runs (safe)")
		n := 0
		reports.Range(func(any, any) bool { n++; return true })
		stuckErr := r.ctrl.Stuck()
		release()
		synctest.Wait()
		require.NoError(t, <-r.served)
		require.Error(t, stuckErr,
			"Stuck (Controller.Live) is healthy %v after a stop's hand-off cancelled a pass that still runs", drain+fenced.RetryPeriod+time.Second)
		require.Equal(t, 1, n, "the stuck pass is reported once by HandOffStuck")
	})
}
