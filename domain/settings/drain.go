package settings

import (
	"fmt"
	"time"
)

// DefaultDrainTimeout is how long a Lease's hand-off waits for the
// reconciles in flight before it cancels them: 15 seconds, the default
// LeaseDuration, so a shard handed off on a rebalance reaches its next
// holder no later than a crashed holder's would, and a leader's drain at
// SIGTERM, with its release, fits the App's 20-second grace period.
const DefaultDrainTimeout = 15 * time.Second

// CheckDrainTimeout reports whether drain can bound a Lease's hand-off
// whose Lease is renewed every retryPeriod: at least a RetryPeriod. A
// shorter drain cancels the reconciles in flight before the Lease's next
// renewal, as a lost Lease would, so it keeps nothing a hand-off is for.
// The error reads after the field's name.
func CheckDrainTimeout(drain, retryPeriod time.Duration) error {
	if drain < retryPeriod {
		return fmt.Errorf("is %v, shorter than RetryPeriod, %v: a drain that short cancels the reconciles in flight before the Lease's next renewal, as a lost Lease would", drain, retryPeriod)
	}
	return nil
}
