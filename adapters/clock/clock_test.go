package clock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/adapters/clock"
)

func TestReal_AfterFunc_fires_once_d_has_passed_unless_stopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := clock.Real{}.Now()
		fired := make(chan time.Duration, 2)
		clock.Real{}.AfterFunc(time.Second, func() { fired <- time.Since(start) })
		stop := clock.Real{}.AfterFunc(2*time.Second, func() { fired <- time.Since(start) })
		require.True(t, stop(), "a timer that hasn't fired is stopped")
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Len(t, fired, 1, "the stopped timer never fires")
		require.Equal(t, time.Second, <-fired)
	})
}
