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
