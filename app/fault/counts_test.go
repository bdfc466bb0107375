package fault

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCountCacheForgetsLeastRecentlyUsed(t *testing.T) {
	c := newCountCache(2)
	a := c.get("a", 1)
	a[0] = 5
	b := c.get("b", 1)
	b[0] = 7
	require.Equal(t, []int{5}, c.get("a", 1), "a is kept, and now the most recently used")

	c.get("c", 1) // forgets b, the least recently used
	require.Equal(t, 2, c.len())
	require.Equal(t, []int{5}, c.get("a", 1))
	require.Equal(t, []int{0}, c.get("b", 1), "a forgotten scenario counts afresh")
	require.Equal(t, 2, c.len())
}

func TestCountCacheResizes(t *testing.T) {
	c := newCountCache(1)
	c.get("a", 1)[0] = 3
	require.Equal(t, []int{0, 0}, c.get("a", 2), "counts of another shape start afresh")
}
