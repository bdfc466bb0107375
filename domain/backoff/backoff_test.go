package backoff_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/domain/settings"
)

// clock is a fake ports.Clock that moves only when the test moves it.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func (c *clock) step(d time.Duration) { c.now = c.now.Add(d) }

func TestPolicy_Exponential_doubles_from_the_base_to_the_cap(t *testing.T) {
	p := backoff.Default()
	want := []time.Duration{
		5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond,
		80 * time.Millisecond, 160 * time.Millisecond, 320 * time.Millisecond, 640 * time.Millisecond,
		1280 * time.Millisecond, 2560 * time.Millisecond, 5120 * time.Millisecond, 10240 * time.Millisecond,
		20480 * time.Millisecond, 40960 * time.Millisecond, 81920 * time.Millisecond, 163840 * time.Millisecond,
		327680 * time.Millisecond, 655360 * time.Millisecond,
		// 5ms·2¹⁸ is 1310.72s: capped from here on.
		1000 * time.Second, 1000 * time.Second,
	}
	for failures, d := range want {
		require.Equal(t, d, p.Exponential(failures), "after %d failures", failures)
	}
	for _, failures := range []int{63, 64, 1000, 1 << 40} {
		require.Equal(t, 1000*time.Second, p.Exponential(failures), "no overflow after %d failures", failures)
	}
}

func TestPolicy_Exponential_with_the_cap_below_the_base_is_the_cap(t *testing.T) {
	p := backoff.Policy{BaseDelay: time.Second, MaxDelay: time.Millisecond}
	require.Equal(t, time.Millisecond, p.Exponential(0))
}

func TestBucket_lets_a_burst_through_then_spaces_reservations_by_the_rate(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	b := backoff.NewBucket(10, 100, t0)
	for i := range 100 {
		require.Zero(t, b.Reserve(t0), "reservation %d of the burst", i+1)
	}
	require.Equal(t, 100*time.Millisecond, b.Reserve(t0))
	require.Equal(t, 200*time.Millisecond, b.Reserve(t0))

	// 300ms later the two borrowed tokens are repaid and one is back.
	require.Zero(t, b.Reserve(t0.Add(300*time.Millisecond)))
	require.Equal(t, 100*time.Millisecond, b.Reserve(t0.Add(300*time.Millisecond)))

	// A reservation stamped before the last counts as at the last.
	require.Equal(t, 200*time.Millisecond, b.Reserve(t0))

	// Refilling stops at the burst: a long pause buys 100 tokens, not more.
	later := t0.Add(time.Hour)
	for i := range 100 {
		require.Zero(t, b.Reserve(later), "reservation %d after the pause", i+1)
	}
	require.Equal(t, 100*time.Millisecond, b.Reserve(later))
}

func TestBucket_with_no_rate_never_refills(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := backoff.NewBucket(0, 1, t0)
	require.Zero(t, b.Reserve(t0))
	require.Greater(t, b.Reserve(t0.Add(time.Hour)), 100*365*24*time.Hour)
}

func TestLimiter_is_the_longer_of_the_keys_backoff_and_the_bucket(t *testing.T) {
	c := &clock{now: time.Unix(1_000_000, 0)}
	l := backoff.NewLimiter[string](backoff.Default(), c)

	// One key failing: its own backoff, the bucket being nowhere near empty.
	require.Equal(t, 5*time.Millisecond, l.When("a"))
	require.Equal(t, 10*time.Millisecond, l.When("a"))
	require.Equal(t, 20*time.Millisecond, l.When("a"))
	require.Equal(t, 3, l.NumRequeues("a"))

	// Forget starts the key's backoff again, and touches no other key.
	require.Equal(t, 5*time.Millisecond, l.When("b"))
	l.Forget("a")
	require.Zero(t, l.NumRequeues("a"))
	require.Equal(t, 1, l.NumRequeues("b"))
	require.Equal(t, 5*time.Millisecond, l.When("a"))

	// 5 tokens are gone; 95 more keys failing at once take the rest of the
	// burst, each with its own first backoff.
	for i := range 95 {
		require.Equal(t, 5*time.Millisecond, l.When(fmt.Sprint("key-", i)))
	}
	// From then on the bucket spaces them: 10 a second, across keys.
	require.Equal(t, 100*time.Millisecond, l.When("x"))
	require.Equal(t, 200*time.Millisecond, l.When("y"))

	// Once the bucket has refilled, a key's own backoff is back in charge.
	c.step(time.Minute)
	require.Equal(t, 10*time.Millisecond, l.When("x"))
}

// TestOf_is_the_settings_bucket: a controller's RetryRate and RetryBurst
// shape its retries across keys, as its delays shape each key's.
func TestOf_is_the_settings_bucket(t *testing.T) {
	s := settings.Default()
	s.RetryBaseDelay, s.RetryMaxDelay = time.Millisecond, time.Minute
	s.RetryRate, s.RetryBurst = 2, 3
	p := backoff.Of(s)
	require.Equal(t, backoff.Policy{BaseDelay: time.Millisecond, MaxDelay: time.Minute, Rate: 2, Burst: 3}, p)
	require.Equal(t, backoff.Default(), backoff.Of(settings.Default()))

	c := &clock{now: time.Unix(1_000_000, 0)}
	l := backoff.NewLimiter[string](p, c)
	// A burst of 3 goes at each key's own first delay; the 4th and 5th
	// wait for the bucket, refilled 2 a second.
	for _, key := range []string{"a", "b", "c"} {
		require.Equal(t, time.Millisecond, l.When(key))
	}
	require.Equal(t, 500*time.Millisecond, l.When("d"))
	require.Equal(t, time.Second, l.When("e"))
}

func TestLimiter_is_safe_for_concurrent_use(t *testing.T) {
	c := &clock{now: time.Unix(0, 0)}
	l := backoff.NewLimiter[int](backoff.Default(), c)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for range 50 {
				l.When(w)
				l.NumRequeues(w)
			}
			l.Forget(w)
		})
	}
	wg.Wait()
	for w := range 8 {
		require.Zero(t, l.NumRequeues(w))
	}
}
