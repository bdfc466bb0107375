package shrink_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest/internal/shrink"
)

// holds returns a predicate that fails a sequence holding every culprit,
// and counts its calls.
func holds(culprits []int, calls *int) func([]int) bool {
	return func(s []int) bool {
		*calls++
		for _, c := range culprits {
			if !slices.Contains(s, c) {
				return false
			}
		}
		return true
	}
}

func TestMinimize_finds_exactly_the_steps_that_cause_the_failure(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rnd.IntN(60)
		steps := make([]int, n)
		for i := range steps {
			steps[i] = i
		}
		culprits := slices.Clone(rnd.Perm(n)[:1+rnd.IntN(min(n, 4))])
		slices.Sort(culprits)
		calls := 0
		got := shrink.Minimize(steps, holds(culprits, &calls))
		require.Equal(t, culprits, got, "of %d steps", n)
		require.LessOrEqual(t, calls, n*n+1, "calls for %d steps", n)
	}
}

func TestMinimize_keeps_the_order_and_is_1_minimal_for_an_order_dependent_failure(t *testing.T) {
	// Fails when a 3 comes somewhere after a 7: a delete after a create.
	fails := func(s []int) bool {
		i := slices.Index(s, 7)
		return i >= 0 && slices.Contains(s[i+1:], 3)
	}
	got := shrink.Minimize([]int{1, 3, 5, 7, 2, 7, 9, 3, 4}, fails)
	require.Equal(t, []int{7, 3}, got)
}

func TestMinimize_returns_a_passing_sequence_unchanged(t *testing.T) {
	calls := 0
	steps := []int{1, 2, 3}
	require.Equal(t, steps, shrink.Minimize(steps, holds([]int{9}, &calls)))
	require.Equal(t, 1, calls)
	require.Empty(t, shrink.Minimize(nil, holds(nil, &calls)))
}

func TestMinimize_a_failure_that_needs_nothing_shrinks_to_one_step(t *testing.T) {
	got := shrink.Minimize([]int{4, 5, 6}, func([]int) bool { return true })
	require.Len(t, got, 1)
}
