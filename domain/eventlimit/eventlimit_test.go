package eventlimit_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/eventlimit"
)

// An object has 25 Events at once, then one every five minutes, as
// client-go's spam filter allows; another object's bucket is its own.
func TestBuckets_client_go_defaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := eventlimit.New[string](eventlimit.DefaultBurst, eventlimit.DefaultEvery)
		require.NoError(t, err)
		took := 0
		for range 30 {
			if b.Take("a", time.Now()) {
				took++
			}
		}
		require.Equal(t, 25, took)
		require.True(t, b.Take("b", time.Now()), "another object has its own bucket")

		time.Sleep(5*time.Minute - time.Second)
		require.False(t, b.Take("a", time.Now()), "a token takes five minutes to come back")
		time.Sleep(time.Second)
		require.True(t, b.Take("a", time.Now()))
		require.False(t, b.Take("a", time.Now()))

		time.Sleep(25 * 5 * time.Minute)
		require.InDelta(t, 25, b.Tokens("a", time.Now()), 1e-9, "the bucket fills up to its burst, no further")
		time.Sleep(time.Hour)
		require.InDelta(t, 25, b.Tokens("a", time.Now()), 1e-9)
	})
}

// A clock that steps back takes nothing from the bucket's tokens.
func TestBuckets_a_clock_stepping_back(t *testing.T) {
	b, err := eventlimit.New[int](1, time.Minute)
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	require.True(t, b.Take(1, now))
	require.False(t, b.Take(1, now.Add(-time.Hour)))
	require.True(t, b.Take(1, now.Add(time.Minute)))
}

// Full buckets are forgotten once many are kept, so the memory follows the
// objects that recently had Events.
func TestBuckets_forgets_full_buckets(t *testing.T) {
	b, err := eventlimit.New[int](2, time.Second)
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	for i := range 5000 {
		b.Take(i, now)
	}
	require.Equal(t, 5000, b.Len(), "the sweep past 4096 found no bucket full")
	later := now.Add(time.Hour)
	for i := 5000; i < 10000; i++ {
		b.Take(i, later)
	}
	// The sweep past 8194 forgot the first 5000, full again an hour on.
	require.Equal(t, 5000, b.Len())
	require.InDelta(t, 1, b.Tokens(9999, later), 1e-9)
	require.InDelta(t, 2, b.Tokens(0, later), 1e-9)
}

func TestNew_mistakes(t *testing.T) {
	_, err := eventlimit.New[int](0, -time.Second)
	require.ErrorContains(t, err, "the burst is 0, below 1")
	require.ErrorContains(t, err, "not a positive duration")
}
