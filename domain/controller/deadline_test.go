package controller_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/reconcile"
)

// rigTimeout is the rig's ReconcileTimeout: kube's default, longer than
// any other test holds a reconcile.
const rigTimeout = 5 * time.Minute

// "A reconcile deadline: a setting after which a reconcile's context is
// cancelled; a timed-out reconcile is a failure retried with backoff." A
// hung reconcile holds its worker until its call returns, then the worker
// goes on with the other keys.
func TestServe_cancels_a_reconcile_at_its_ReconcileTimeout_and_retries_it(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, 1)
		ctx, stop := context.WithCancel(t.Context())
		r.lead(ctx)
		offset := time.Since(r.handler.start)
		r.change("hold", "a")
		synctest.Wait()
		require.Empty(t, r.handler.of("a"), "the one worker is held")

		time.Sleep(rigTimeout)
		synctest.Wait()
		causes := r.handler.heldCauses()
		require.Len(t, causes, 1)
		require.ErrorIs(t, causes[0], context.DeadlineExceeded)
		var deadline *reconcile.DeadlineError
		require.ErrorAs(t, causes[0], &deadline, "cancelled by its deadline, with a cause of its own")
		require.Equal(t, rigTimeout, deadline.Timeout)
		require.Equal(t, []time.Duration{offset + rigTimeout}, r.handler.of("a"),
			"the worker went on at the deadline, once the hung call returned")

		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []time.Duration{offset, offset + rigTimeout + 5*time.Millisecond}, r.handler.of("hold"),
			"retried after the first backoff")

		close(r.handler.release)
		stop()
		require.NoError(t, <-r.served)
	})
}
