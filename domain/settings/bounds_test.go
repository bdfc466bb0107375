package settings_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/settings"
)

func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func() error
		want  string // "" when the values keep the bound
	}{
		{"retry: defaults", func() error { return settings.CheckRetryMaxDelay(1000*time.Second, 5*time.Millisecond) }, ""},
		{"retry: equal", func() error { return settings.CheckRetryMaxDelay(time.Second, time.Second) }, ""},
		{"retry: max below base", func() error { return settings.CheckRetryMaxDelay(time.Millisecond, 5*time.Millisecond) }, "1ms is shorter than RetryBaseDelay, 5ms"},

		{"lease: defaults", func() error { return settings.CheckLeaseDuration(15*time.Second, 10*time.Second) }, ""},
		{"lease: equal", func() error { return settings.CheckLeaseDuration(10*time.Second, 10*time.Second) }, "10s is not longer than RenewDeadline, 10s"},
		{"lease: shorter", func() error { return settings.CheckLeaseDuration(5*time.Second, 10*time.Second) }, "5s is not longer than RenewDeadline, 10s"},
		{"lease: a nanosecond longer", func() error { return settings.CheckLeaseDuration(10*time.Second+1, 10*time.Second) }, ""},

		{"renew: defaults", func() error { return settings.CheckRenewDeadline(10*time.Second, 2*time.Second) }, ""},
		{"renew: exactly 1.2 retry periods", func() error { return settings.CheckRenewDeadline(12*time.Second, 10*time.Second) }, "12s is not longer than 1.2 RetryPeriods of 10s, 12s"},
		{"renew: a nanosecond over 1.2 retry periods", func() error { return settings.CheckRenewDeadline(12*time.Second+1, 10*time.Second) }, ""},
		{"renew: equal to the retry period", func() error { return settings.CheckRenewDeadline(2*time.Second, 2*time.Second) }, "2s is not longer than 1.2 RetryPeriods of 2s, 2.4s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

// TestFenced: timings are fenced only when a standby, counting the Lease's
// whole seconds from the first renewal of the last one's second, can't
// take it before a cut-off leader gives it up RetryPeriod + RenewDeadline
// after its last renewal.
func TestFenced(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		leaseDuration, renewDeadline, retryPeriod time.Duration
		want                                      bool
	}{
		{"Kubernetes' defaults: a margin of 3s", 15 * time.Second, 10 * time.Second, 2 * time.Second, true},
		{"the chaos tests': a margin of 1s", 4 * time.Second, 2 * time.Second, 500 * time.Millisecond, true},
		{"a margin of 0.5s", 3 * time.Second, 1500 * time.Millisecond, 500 * time.Millisecond, true},
		{"a margin of a second", 13 * time.Second, 10 * time.Second, 2 * time.Second, true},
		{"2.9s counts 2s, and two renewals share a second", 2900 * time.Millisecond, 2 * time.Second, 500 * time.Millisecond, false},
		{"15.9s counts 15s", 15900 * time.Millisecond, 14 * time.Second, 1500 * time.Millisecond, false},
		{"12.001s counts 12s: no margin", 12*time.Second + time.Millisecond, 10 * time.Second, 2 * time.Second, false},
		{"exactly RenewDeadline + RetryPeriod", 12 * time.Second, 10 * time.Second, 2 * time.Second, false},
		{"3s, 2s, 0.5s: no margin, as renewals 0.5s apart share a second", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond, false},
		{"renewals 0.3s apart: three share a second", 3 * time.Second, 1900 * time.Millisecond, 300 * time.Millisecond, false},
		{"within client-go's bounds, but unfenced", 11 * time.Second, 10 * time.Second, 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, settings.Fenced(tc.leaseDuration, tc.renewDeadline, tc.retryPeriod))
		})
	}
}

func TestTakeoverBounds(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		leaseDuration, renewDeadline, retryPeriod time.Duration
		earliest, latest, released, stops, margin time.Duration
	}{
		{"Kubernetes' defaults", 15 * time.Second, 10 * time.Second, 2 * time.Second,
			15 * time.Second, 23800 * time.Millisecond, 4400 * time.Millisecond, 12 * time.Second, 3 * time.Second},
		{"the chaos tests'", 4 * time.Second, 2 * time.Second, 500 * time.Millisecond,
			3500 * time.Millisecond, 6200 * time.Millisecond, 1100 * time.Millisecond, 2500 * time.Millisecond, time.Second},
		{"3.9s counts 3s", 3900 * time.Millisecond, 2 * time.Second, 500 * time.Millisecond,
			2500 * time.Millisecond, 5200 * time.Millisecond, 1100 * time.Millisecond, 2500 * time.Millisecond, 0},
		{"renewals 0.3s apart", 3 * time.Second, 1900 * time.Millisecond, 300 * time.Millisecond,
			2100 * time.Millisecond, 4320 * time.Millisecond, 660 * time.Millisecond, 2200 * time.Millisecond, -100 * time.Millisecond},
		{"renewals a second apart", 5 * time.Second, 3 * time.Second, time.Second,
			5 * time.Second, 9400 * time.Millisecond, 2200 * time.Millisecond, 4 * time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			earliest, latest := settings.Takeover(tc.leaseDuration, tc.retryPeriod)
			require.Equal(t, tc.earliest, earliest, "earliest")
			require.Equal(t, tc.latest, latest, "latest")
			require.Equal(t, tc.released, settings.TakeoverReleased(tc.retryPeriod), "released")
			require.Equal(t, tc.stops, settings.LeaderStops(tc.renewDeadline, tc.retryPeriod), "stops")
			require.Equal(t, tc.margin, settings.FenceMargin(tc.leaseDuration, tc.renewDeadline, tc.retryPeriod), "margin")
		})
	}
}

func TestSameSecond(t *testing.T) {
	for _, tc := range []struct{ retryPeriod, want time.Duration }{
		{500 * time.Millisecond, 500 * time.Millisecond},
		{400 * time.Millisecond, 800 * time.Millisecond},
		{300 * time.Millisecond, 900 * time.Millisecond},
		{250 * time.Millisecond, 750 * time.Millisecond},
		{999 * time.Millisecond, 999 * time.Millisecond},
		{time.Second, 0},
		{2 * time.Second, 0},
		{0, 0},
		{-time.Second, 0},
	} {
		require.Equal(t, tc.want, settings.SameSecond(tc.retryPeriod), "RetryPeriod %v", tc.retryPeriod)
	}
	require.Equal(t, 15*time.Second, settings.LeaseSeconds(15900*time.Millisecond))
	require.Equal(t, 2*time.Second, settings.LeaseSeconds(2999*time.Millisecond))
}

func TestFenceAfter(t *testing.T) {
	for _, tc := range []struct{ leaseDuration, retryPeriod, want time.Duration }{
		{15 * time.Second, 2 * time.Second, 13 * time.Second},                         // W 15, S 0
		{4 * time.Second, 500 * time.Millisecond, 3 * time.Second},                    // W 4, S 0.5
		{3 * time.Second, 500 * time.Millisecond, 2 * time.Second},                    // W 3, S 0.5
		{2900 * time.Millisecond, 500 * time.Millisecond, time.Second},                // W 2, S 0.5
		{2 * time.Second, 400 * time.Millisecond, 800 * time.Millisecond},             // W 2, S 0.8
		{time.Second, 300 * time.Millisecond, -200 * time.Millisecond},                // W 1, S 0.9: no time to lead
		{15900 * time.Millisecond, 1500 * time.Millisecond, 13500 * time.Millisecond}, // W 15, S 0
	} {
		require.Equal(t, tc.want, settings.FenceAfter(tc.leaseDuration, tc.retryPeriod), "LeaseDuration %v, RetryPeriod %v", tc.leaseDuration, tc.retryPeriod)
	}
}
