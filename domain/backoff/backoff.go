// Package backoff is the policy that spaces a controller's retries: a
// backoff of each key's own, doubling with each failure, under a token
// bucket shared by every key, whichever is longer. It is client-go's
// DefaultTypedControllerRateLimiter made pure, so its numbers are tested
// without waiting for them.
package backoff

import (
	"math"
	"sync"
	"time"

	"github.com/loam-dev/loam/domain/settings"
)

// Policy is the shape of a controller's retries.
type Policy struct {
	// BaseDelay is a key's backoff after its first failure.
	BaseDelay time.Duration
	// MaxDelay caps a key's backoff, however often it has failed.
	MaxDelay time.Duration
	// Rate is how many retries a second the bucket refills, across every
	// key.
	Rate float64
	// Burst is how many retries the bucket lets through at once.
	Burst int
}

// Default returns client-go's DefaultTypedControllerRateLimiter as a
// Policy: 5ms doubling to 1000s per key, under 10 retries a second
// bursting to 100.
func Default() Policy {
	return Policy{
		BaseDelay: settings.DefaultRetryBaseDelay,
		MaxDelay:  settings.DefaultRetryMaxDelay,
		Rate:      settings.DefaultRetryRate,
		Burst:     settings.DefaultRetryBurst,
	}
}

// Of returns the Policy a controller's Settings configure: a key's backoff
// from RetryBaseDelay to RetryMaxDelay, under a bucket of RetryRate
// retries a second bursting to RetryBurst.
func Of(s settings.Settings) Policy {
	return Policy{BaseDelay: s.RetryBaseDelay, MaxDelay: s.RetryMaxDelay, Rate: s.RetryRate, Burst: s.RetryBurst}
}

// Exponential returns the backoff of a key that has failed failures times
// before this failure: BaseDelay doubled that many times, capped at
// MaxDelay.
func (p Policy) Exponential(failures int) time.Duration {
	d := float64(p.BaseDelay) * math.Pow(2, float64(failures))
	if d >= float64(p.MaxDelay) {
		return p.MaxDelay
	}
	return time.Duration(d)
}

// Bucket is a token bucket, advanced by the times its caller hands it
// rather than by a clock of its own. It holds Burst tokens when full and
// refills Rate of them a second. A reservation always succeeds: it takes a
// token, borrowing one not yet refilled when the bucket is empty, and says
// how long until that token exists, as golang.org/x/time/rate's
// Reserve().Delay() does. The zero Bucket is not usable: make one with
// NewBucket.
type Bucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket of burst tokens refilled at rate a
// second, as of now.
func NewBucket(rate float64, burst int, now time.Time) *Bucket {
	return &Bucket{rate: rate, burst: float64(burst), tokens: float64(burst), last: now}
}

// Reserve takes a token at now, and returns how long after now it may be
// used: 0 while the bucket holds one. A now before the last reservation's
// counts as the same instant.
func (b *Bucket) Reserve(now time.Time) time.Duration {
	if now.After(b.last) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	if b.rate <= 0 {
		return math.MaxInt64
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// Limiter applies a Policy to the keys of a work queue. Its methods are
// those of client-go's workqueue.TypedRateLimiter[K]. It is safe for
// concurrent use.
type Limiter[K comparable] struct {
	policy Policy
	clock  Clock

	mu       sync.Mutex
	failures map[K]int
	bucket   *Bucket
}

// Clock tells the Limiter the time; ports.Clock is one.
type Clock interface {
	Now() time.Time
}

// NewLimiter returns a Limiter of p whose bucket runs on clock, full as of
// now.
func NewLimiter[K comparable](p Policy, clock Clock) *Limiter[K] {
	return &Limiter[K]{
		policy:   p,
		clock:    clock,
		failures: map[K]int{},
		bucket:   NewBucket(p.Rate, p.Burst, clock.Now()),
	}
}

// When counts a failure of key and returns how long to wait before
// retrying it: the longer of its own backoff and the bucket's delay.
func (l *Limiter[K]) When(key K) time.Duration {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.failures[key]
	l.failures[key] = n + 1
	return max(l.policy.Exponential(n), l.bucket.Reserve(now))
}

// Forget ends key's backoff, so its next failure waits BaseDelay again.
func (l *Limiter[K]) Forget(key K) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, key)
}

// NumRequeues returns how many failures of key When has counted since it
// was last forgotten.
func (l *Limiter[K]) NumRequeues(key K) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures[key]
}
