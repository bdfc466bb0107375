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

// The bounds below are client-go v0.37's leaderelection, computed as it
// computes them (docs/reliability.md has the derivation), with requests
// that take no time: what those take, and the clocks' rates, come out of
// FenceMargin.

// LeaseSeconds returns the LeaseDuration a holder's Lease record carries:
// client-go writes leaseDurationSeconds = int(leaseDuration / time.Second),
// and a standby counts those whole seconds, so a fraction of a second
// never counts.
func LeaseSeconds(leaseDuration time.Duration) time.Duration {
	return leaseDuration / time.Second * time.Second
}

// SameSecond returns how long before the holder's last renewal a standby
// may have last seen its Lease change. client-go compares the records it
// reads as JSON, whose renewTime has whole seconds, so a renewal stamped in
// the second of the one before looks unchanged, and the standby counts from
// when it first saw that second. A holder renews RetryPeriod apart, so that
// is the largest multiple of retryPeriod under a second: nothing when
// retryPeriod is a second or more. It returns 0 for a retryPeriod that
// isn't positive.
func SameSecond(retryPeriod time.Duration) time.Duration {
	if retryPeriod <= 0 || retryPeriod >= time.Second {
		return 0
	}
	return (time.Second - 1) / retryPeriod * retryPeriod
}

// RetryGap returns the longest a candidate waits between two tries to
// take a Lease, never reached: client-go's wait.JitterUntil waits
// retryPeriod plus up to JitterFactor retryPeriods more, after a try ends.
func RetryGap(retryPeriod time.Duration) time.Duration {
	return retryPeriod + time.Duration(JitterFactor*float64(retryPeriod))
}

// Takeover returns the earliest and the latest a standby takes a Lease
// whose holder stopped renewing it, counted from the holder's last
// renewal; the latest is never reached. The standby stamps observedTime
// when a try's read finds the record changed, which it does at the latest
// a RetryGap after the renewal and at the earliest SameSecond before it;
// the Lease is free to it LeaseSeconds after observedTime; and its first
// try from then on takes it, within a RetryGap, stamping acquireTime as it
// starts.
func Takeover(leaseDuration, retryPeriod time.Duration) (earliest, latest time.Duration) {
	whole := LeaseSeconds(leaseDuration)
	return whole - SameSecond(retryPeriod), whole + 2*RetryGap(retryPeriod)
}

// TakeoverReleased returns the latest a standby takes a released Lease,
// counted from the release, never reached: a released Lease has no holder,
// so the standby's next try takes it.
func TakeoverReleased(retryPeriod time.Duration) time.Duration {
	return RetryGap(retryPeriod)
}

// LeaderStops returns the latest a leader cut off from the API server
// still leads, counted from its last renewal: client-go starts its next
// renewal retryPeriod after that one returned, and gives leadership up
// when its tries have failed for renewDeadline.
func LeaderStops(renewDeadline, retryPeriod time.Duration) time.Duration {
	return retryPeriod + renewDeadline
}

// FenceAfter returns how long after the start of its last renewal the API
// server accepted a leader fences itself, cancelling its passes on its own
// clock: Takeover's earliest less one retryPeriod, left for the passes to
// see their context end. A standby reads that renewal no sooner than its
// request began, so it takes the Lease no sooner than Takeover's earliest
// after that start. Renewals whose requests take time may share that
// renewal's second further back than SameSecond, up to a second: the fence
// still lapses no later than the standby's earliest take, since SameSecond
// plus retryPeriod is at least a second, with less of the retryPeriod left.
// It is not positive when the Lease leaves a leader no time to lead.
func FenceAfter(leaseDuration, retryPeriod time.Duration) time.Duration {
	earliest, _ := Takeover(leaseDuration, retryPeriod)
	return earliest - retryPeriod
}

// FenceMargin returns how long before a standby may take the Lease a
// leader cut off from the API server has stopped leading, at the least:
// Takeover's earliest less LeaderStops. The time requests take and the
// difference of two clocks' rates come out of it; a margin that isn't
// positive lets a standby take over while the old leader still reconciles.
func FenceMargin(leaseDuration, renewDeadline, retryPeriod time.Duration) time.Duration {
	earliest, _ := Takeover(leaseDuration, retryPeriod)
	return earliest - LeaderStops(renewDeadline, retryPeriod)
}

// Fenced reports whether Lease timings fence leadership: whether their
// FenceMargin is positive, so that a leader cut off from the API server
// has stopped leading before any standby may take the Lease. client-go's
// own bounds, which CheckLeaseDuration and CheckRenewDeadline hold, allow
// timings that aren't fenced, so this is a warning the controller records
// when it starts, not a mistake.
func Fenced(leaseDuration, renewDeadline, retryPeriod time.Duration) bool {
	return FenceMargin(leaseDuration, renewDeadline, retryPeriod) > 0
}
