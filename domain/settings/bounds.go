package settings

import (
	"fmt"
	"time"
)

// JitterFactor is client-go's leaderelection.JitterFactor: a candidate
// retries the Lease up to that many RetryPeriods apart, so RenewDeadline
// has to be longer for a renewal to get a second try.
const JitterFactor = 1.2

// CheckRetryMaxDelay reports whether a backoff capped at maxDelay can start
// at baseDelay: maxDelay is at least baseDelay. The error reads after the
// field's name.
func CheckRetryMaxDelay(maxDelay, baseDelay time.Duration) error {
	if maxDelay < baseDelay {
		return fmt.Errorf("%v is shorter than RetryBaseDelay, %v", maxDelay, baseDelay)
	}
	return nil
}

// CheckLeaseDuration reports whether a Lease held for leaseDuration outlasts
// a leader's renewDeadline, as client-go's leader election requires: a
// leader that can't renew steps down before a standby may take the Lease.
// The error reads after the field's name.
func CheckLeaseDuration(leaseDuration, renewDeadline time.Duration) error {
	if leaseDuration <= renewDeadline {
		return fmt.Errorf("%v is not longer than RenewDeadline, %v", leaseDuration, renewDeadline)
	}
	return nil
}

// CheckRenewDeadline reports whether renewDeadline is longer than
// JitterFactor retryPeriods, as client-go's leader election requires. The
// error reads after the field's name.
func CheckRenewDeadline(renewDeadline, retryPeriod time.Duration) error {
	// The same arithmetic as client-go's, so the two agree at the edge.
	if jittered := time.Duration(JitterFactor * float64(retryPeriod)); renewDeadline <= jittered {
		return fmt.Errorf("%v is not longer than %v RetryPeriods of %v, %v", renewDeadline, JitterFactor, retryPeriod, jittered)
	}
	return nil
}

// Fenced reports whether Lease timings fence leadership: a leader cut off
// from the API server stops reconciling at most RetryPeriod + RenewDeadline
// after its last renewal, and a standby may take the Lease LeaseDuration
// after it, so leaseDuration must be the longer for two replicas never to
// reconcile at once. client-go's own bounds, which CheckLeaseDuration and
// CheckRenewDeadline hold, allow timings that aren't fenced, so this is a
// warning the controller records when it starts, not a mistake.
func Fenced(leaseDuration, renewDeadline, retryPeriod time.Duration) bool {
	return leaseDuration > renewDeadline+retryPeriod
}
