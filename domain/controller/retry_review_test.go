package controller_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
)

// A conversion webhook that hangs rather than refuses: each check takes
// 20 s to fail. The retries still end within the Gate's Bound (30 s) of
// the first try, rather than a check started just before the Bound
// running on past it.
func TestReview_retries_of_a_hanging_check_end_within_the_Bound(t *testing.T) {
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
		require.LessOrEqual(t, time.Since(start), 30*time.Second, "the Bound, from the first try")
	})
}
