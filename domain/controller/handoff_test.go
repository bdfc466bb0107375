package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/controller"
)

// TestShardedHandOffRenewsTheLeaseUntilItsPassesReturn: a shard given up
// on a rebalance while a pass over its object runs longer than the
// Lease keeps its Lease renewed until the pass returns, so no other
// replica can take the shard meanwhile; only then does the Lease go.
func TestShardedHandOffRenewsTheLeaseUntilItsPassesReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// b joins: a gives shard 1 up, with the pass in flight.
		srv, r, cancel, held := handingOffShard1(t)
		defer cancel()
		defer r.handler.free()
		time.Sleep(2 * fenced.LeaseDuration)
		require.False(t, srv.takeable("shard-1"), "another replica could take shard 1 while its pass runs: %q", r.j.all())
		require.Equal(t, "a_1", srv.holder("shard-1"))

		r.handler.free()
		synctest.Wait()
		require.Empty(t, srv.holder("shard-1"))
		r.j.before(t, "reconciled "+held, "a_1 stops renewing shard-1")
		r.j.before(t, "watch releases 1", "a_1 stops renewing shard-1")
		require.Equal(t, []error{nil}, r.handler.heldCauses(), "the pass finished, uncancelled")
		r.stopServing(t, cancel)
	})
}

// TestShardedRetakeDuringADrainWaitsForIt: a shard taken back while it
// still drains is never campaigned for twice at once, and ends held and
// watched, the Watch's Hold after its Release.
func TestShardedRetakeDuringADrainWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// b joins, and leaves while a drains shard 1.
		srv, r, cancel, _ := handingOffShard1(t)
		defer cancel()
		defer r.handler.free()
		srv.set("member-b", "", 0)
		synctest.Wait()
		time.Sleep(fenced.RetryPeriod)
		r.handler.free()
		synctest.Wait()
		time.Sleep(2 * fenced.RetryPeriod)
		synctest.Wait()

		require.Equal(t, 1, srv.mostElectors("shard-1"), "two campaigns for shard 1 at once: %q", r.j.all())
		require.Equal(t, "a_1", srv.holder("shard-1"))
		require.Equal(t, "watch holds 1", lastOf(r.j.all(), "watch ", " 1"), "shard 1 held but unwatched: %q", r.j.all())
		r.stopServing(t, cancel)
	})
}

// handingOffShard1 runs replica a of a controller with two shards, holds
// a pass over an object of shard 1 in its Handler, and has replica b join,
// so that a hands shard 1 off with the pass in flight. It returns the
// Lease server, the rig, the function that stops Serve and the held
// object's name; the caller defers the stop and r.handler.free.
func handingOffShard1(t *testing.T, with ...func(*controller.Config)) (*leaseServer, *rig, context.CancelFunc, string) {
	t.Helper()
	srv := newLeaseServer(nil)
	r := newShardedRig(t, srv, 2, with...)
	cancel := r.runSharded(t)
	held := objectOf("hold", 1, 2)
	r.change(held)
	synctest.Wait()
	srv.set("member-b", "b_1", 2)
	synctest.Wait()
	return srv, r, cancel, held
}

// lastOf returns the last line that starts with prefix and ends with
// suffix, or "".
func lastOf(lines []string, prefix, suffix string) string {
	for _, l := range slices.Backward(lines) {
		if strings.HasPrefix(l, prefix) && strings.HasSuffix(l, suffix) {
			return l
		}
	}
	return ""
}

// Finding 8 of issue 42: the single leader's Lease at a stop. Serve's
// context ending while a reconcile runs longer than the Lease keeps the
// Elector's context alive, so the Lease is renewed, until the reconcile
// returns.
func TestServe_on_its_context_renews_the_Lease_until_a_reconcile_longer_than_it_returns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		defer r.handler.free()
		r.lead(ctx)
		r.change("hold")
		synctest.Wait()

		stop()
		time.Sleep(2 * fenced.LeaseDuration)
		require.NotContains(t, r.j.all(), "stop renewing", "the Lease is renewed while a reconcile runs")
		r.handler.free()
		require.NoError(t, <-r.served)
		r.j.before(t, "reconciled hold", "stop renewing")
		require.Equal(t, []error{nil}, r.handler.heldCauses())
	})
}

// A stop cancels a reconcile still running DrainTimeout after it began,
// with ErrDrainTimeout, and releases the Lease only once it returned.
func TestServe_on_its_context_cancels_a_reconcile_still_running_DrainTimeout_after(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 20 * time.Second
		r := newRig(t, 1, func(c *controller.Config) { c.DrainTimeout = drain })
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		defer r.handler.free()
		r.lead(ctx)
		r.change("hold")
		synctest.Wait()

		stop()
		time.Sleep(drain - time.Nanosecond)
		require.Empty(t, r.handler.heldCauses(), "cancelled before DrainTimeout")
		time.Sleep(time.Nanosecond)
		require.NoError(t, <-r.served)
		causes := r.handler.heldCauses()
		require.Len(t, causes, 1)
		require.ErrorIs(t, causes[0], controller.ErrDrainTimeout)
		r.j.before(t, "reconciled hold", "stop renewing")
	})
}

// A shard handed off on a rebalance cancels its pass still running
// DrainTimeout after the hand-off began, with ErrDrainTimeout naming the
// shard, and its Lease goes only once the pass returned; the replica
// keeps its other shard and serves on.
func TestShardedHandOffCancelsAPassStillRunningDrainTimeoutAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = 20 * time.Second
		srv, r, cancel, held := handingOffShard1(t, func(c *controller.Config) { c.DrainTimeout = drain })
		defer cancel()
		defer r.handler.free()
		time.Sleep(drain - time.Nanosecond)
		require.Empty(t, r.handler.heldCauses(), "cancelled before DrainTimeout")
		require.Equal(t, "a_1", srv.holder("shard-1"))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		causes := r.handler.heldCauses()
		require.Len(t, causes, 1)
		require.ErrorIs(t, causes[0], controller.ErrDrainTimeout)
		require.EqualError(t, causes[0], "shard 1 of 2: "+controller.ErrDrainTimeout.Error())
		require.Empty(t, srv.holder("shard-1"))
		r.j.before(t, "reconciled "+held, "a_1 stops renewing shard-1")
		require.Equal(t, "a_1", srv.holder("shard-0"))
		r.stopServing(t, cancel)
	})
}

// A shard's Lease lost while it drains cancels its pass at once with
// ErrLostLeadership, and Serve fails with it.
func TestShardedLeaseLostDuringAHandOffCancelsItsPass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, r, cancel, _ := handingOffShard1(t)
		defer cancel()
		defer r.handler.free()
		srv.set("shard-1", "z_9", 2)
		synctest.Wait()
		err := <-r.served
		require.ErrorIs(t, err, controller.ErrLostLeadership)
		causes := r.handler.heldCauses()
		require.Len(t, causes, 1)
		require.ErrorIs(t, causes[0], controller.ErrLostLeadership)
	})
}
