// Package eventlimit decides which Kubernetes Events an object may have
// created: a token bucket per object, as client-go's
// EventSourceObjectSpamFilter keeps one, with its defaults.
package eventlimit

import (
	"errors"
	"fmt"
	"time"
)

const (
	// DefaultBurst is how many Events an object may have created at once,
	// client-go's defaultSpamBurst.
	DefaultBurst = 25
	// DefaultEvery is how long a spent token takes to come back, client-go's
	// defaultSpamQPS of one every five minutes.
	DefaultEvery = 5 * time.Minute
	// sweepAbove is how many buckets are kept before the full ones are
	// first forgotten, client-go's LRU size.
	sweepAbove = 4096
)

// Buckets holds a token bucket for each key, of Burst tokens, one coming
// back every Every. A key never seen, and a key whose bucket has filled up
// again, have Burst tokens. Buckets is not safe for concurrent use: its
// owner, the Events writer's goroutine, serialises its calls.
type Buckets[K comparable] struct {
	burst float64
	every time.Duration
	m     map[K]bucket
	// sweepAt is the count of buckets that sweeps: twice what the last
	// sweep kept, so sweeping costs each Take a constant on average.
	sweepAt int
}

type bucket struct {
	tokens float64
	at     time.Time
}

// New returns Buckets of burst tokens, one coming back every every. It
// fails, naming both mistakes, when burst is below 1 or every is not
// positive.
func New[K comparable](burst int, every time.Duration) (*Buckets[K], error) {
	var errs []error
	if burst < 1 {
		errs = append(errs, fmt.Errorf("eventlimit: the burst is %d, below 1", burst))
	}
	if every <= 0 {
		errs = append(errs, fmt.Errorf("eventlimit: a token comes back every %s, not a positive duration", every))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Buckets[K]{burst: float64(burst), every: every, m: map[K]bucket{}, sweepAt: sweepAbove}, nil
}

// Take takes a token from k's bucket at now and reports whether there was
// one. A now before the bucket's last call counts as no time passed.
func (b *Buckets[K]) Take(k K, now time.Time) bool {
	s, ok := b.m[k]
	if !ok {
		s = bucket{tokens: b.burst, at: now}
	}
	s = b.refill(s, now)
	took := s.tokens >= 1
	if took {
		s.tokens--
	}
	b.m[k] = s
	if len(b.m) > b.sweepAt {
		b.sweep(now)
		b.sweepAt = max(sweepAbove, 2*len(b.m))
	}
	return took
}

// Tokens returns the tokens k's bucket holds at now, for tests and logs.
func (b *Buckets[K]) Tokens(k K, now time.Time) float64 {
	s, ok := b.m[k]
	if !ok {
		return b.burst
	}
	return b.refill(s, now).tokens
}

// Len returns how many buckets are kept: those not full at their last
// call, and any full one not yet swept.
func (b *Buckets[K]) Len() int { return len(b.m) }

func (b *Buckets[K]) refill(s bucket, now time.Time) bucket {
	if d := now.Sub(s.at); d > 0 {
		s.tokens = min(b.burst, s.tokens+float64(d)/float64(b.every))
		s.at = now
	}
	return s
}

// sweep forgets the buckets full again at now: a full bucket is the same
// as none, so the map holds only the objects that recently had Events.
func (b *Buckets[K]) sweep(now time.Time) {
	for k, s := range b.m {
		if b.refill(s, now).tokens >= b.burst {
			delete(b.m, k)
		}
	}
}
