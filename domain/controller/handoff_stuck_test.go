package controller_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

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

// REVIEW: a pass that ignores its context pins its shard forever. On a
// rebalance the shard stops admitting passes, DrainTimeout cancels the
// stuck pass (which doesn't care), and the hand-off then waits for it with
// the Lease renewed, indefinitely: the replica that joined never gets the
// shard, and the replica that holds it admits none of its passes, so
// every object of the shard goes unreconciled on every replica for as long
// as the one pass hangs. docs/kubernetes.md ("the shard's objects wait, on
// no replica, for as long as the slowest reconcile in flight runs, up to
// DrainTimeout, plus the next holder's take") and docs/reliability.md ("a
// hand-off gives the Lease up within DrainTimeout plus the time a
// cancelled reconcile takes to return") promise a bound the code doesn't
// keep.
func TestReview_a_pass_that_ignores_its_context_pins_its_shard_past_DrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 20 * time.Second
		stuck := stubborn{stuck: make(chan struct{})}
		srv := newLeaseServer(nil)
		r := newShardedRig(t, srv, 2, func(c *controller.Config) {
			c.DrainTimeout = drain
			c.Handler = stuck
		})
		cancel := r.runSharded(t)
		defer cancel()
		r.change(objectOf("stuck", 1, 2))
		synctest.Wait()

		// b joins: a must give shard 1 up.
		srv.set("member-b", "b_1", 2)
		synctest.Wait()
		time.Sleep(drain + fenced.LeaseDuration + 3*fenced.RetryPeriod)
		synctest.Wait()
		holder := srv.holder("shard-1")
		close(stuck.stuck)
		synctest.Wait()
		cancel()
		synctest.Wait()
		require.NoError(t, <-r.served)
		require.NotEqual(t, "a_1", holder,
			"shard 1 still held by a %v after the hand-off began (DrainTimeout %v): its objects reconciled by no replica", drain+fenced.LeaseDuration+3*fenced.RetryPeriod, drain)
	})
}
