package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOverlaps checks the checker the leader test relies on: it finds
// every pair of reconciles of two replicas that overlap, and only those.
func TestOverlaps(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	iv := func(replica string, from, to int) interval {
		return interval{replica: replica, object: "w", start: at(from), end: at(to)}
	}
	for _, tc := range []struct {
		name string
		ivs  []interval
		want int
	}{
		{"none", nil, 0},
		{"one replica overlapping itself", []interval{iv("a", 0, 10), iv("a", 5, 15)}, 0},
		{"two replicas one after the other", []interval{iv("a", 0, 10), iv("b", 10, 20)}, 0},
		{"the second begins before the first ends", []interval{iv("a", 0, 10), iv("b", 9, 20)}, 1},
		{"one inside another, given out of order", []interval{iv("b", 3, 4), iv("a", 0, 10)}, 1},
		{"a long one of a, overlapping two of b", []interval{iv("a", 0, 100), iv("b", 10, 20), iv("b", 30, 40)}, 2},
		{"an old long one of a, found after a shorter one of a", []interval{iv("a", 0, 100), iv("a", 10, 20), iv("b", 50, 60)}, 1},
		{"three replicas in turn", []interval{iv("a", 0, 10), iv("b", 10, 20), iv("c", 20, 30), iv("a", 30, 40)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, overlaps(tc.ivs), tc.want)
		})
	}
}
