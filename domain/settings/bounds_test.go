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
