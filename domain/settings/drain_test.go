package settings_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/settings"
)

func TestCheckDrainTimeout(t *testing.T) {
	for _, tc := range []struct {
		drain, retry time.Duration
		err          string
	}{
		{drain: 15 * time.Second, retry: 2 * time.Second},
		{drain: 2 * time.Second, retry: 2 * time.Second},
		{drain: time.Second, retry: 2 * time.Second, err: "is 1s, shorter than RetryPeriod, 2s: a drain that short cancels the reconciles in flight before the Lease's next renewal, as a lost Lease would"},
		{drain: 0, retry: 500 * time.Millisecond, err: "is 0s, shorter than RetryPeriod, 500ms: "},
	} {
		err := settings.CheckDrainTimeout(tc.drain, tc.retry)
		if tc.err == "" {
			require.NoError(t, err, "%v against %v", tc.drain, tc.retry)
			continue
		}
		require.ErrorContains(t, err, tc.err)
	}
}

// A DrainTimeout shorter than RetryPeriod is reported, named, with every
// other mistake; with a RetryPeriod that is itself a mistake, the bound
// isn't checked, so no mistake is reported twice.
func TestValidate_reports_a_short_DrainTimeout_with_the_other_mistakes(t *testing.T) {
	s := valid()
	s.Workers = 0
	s.LeaderElection.DrainTimeout = time.Second
	err := settings.Validate(s)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2, err.Error())
	require.Equal(t, "kube: Settings.LeaderElection.DrainTimeout: is 1s, shorter than RetryPeriod, 2s: a drain that short cancels the reconciles in flight before the Lease's next renewal, as a lost Lease would", lines[1])

	s = valid()
	s.LeaderElection.RetryPeriod = 0
	s.LeaderElection.DrainTimeout = 0
	err = settings.Validate(s)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "DrainTimeout")
}
