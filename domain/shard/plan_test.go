package shard_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/shard"
)

func TestQuota(t *testing.T) {
	for _, tc := range []struct {
		members []string
		count   int
		want    map[string]int
	}{
		{[]string{"a"}, 8, map[string]int{"a": 8}},
		{[]string{"a", "b"}, 8, map[string]int{"a": 4, "b": 4}},
		{[]string{"c", "a", "b"}, 8, map[string]int{"a": 3, "b": 3, "c": 2}},
		{[]string{"a", "b", "c", "d", "e", "f"}, 4, map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "e": 0, "f": 0}},
		{[]string{"b", "a", "b"}, 4, map[string]int{"a": 2, "b": 2}},
	} {
		sum := 0
		for self, want := range tc.want {
			got := shard.Quota(tc.members, self, tc.count)
			require.Equal(t, want, got, "%s of %v, %d shards", self, tc.members, tc.count)
			sum += got
		}
		require.Equal(t, tc.count, sum, "quotas of %v add up to the count", tc.members)
	}
	require.Equal(t, 4, shard.Quota(nil, "alone", 4), "a replica that sees no member counts itself")
}

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		view shard.View
		want shard.Decision
	}{
		{
			name: "alone takes every shard",
			view: shard.View{Count: 4, Self: "a", Members: []string{"a"}, Holders: map[int]string{}},
			want: shard.Decision{Take: []int{0, 1, 2, 3}},
		},
		{
			name: "prefers its own shards",
			view: shard.View{Count: 4, Self: "b", Members: []string{"a", "b"}, Holders: map[int]string{}},
			want: shard.Decision{Take: []int{1, 3}},
		},
		{
			name: "takes only free shards",
			view: shard.View{Count: 4, Self: "b", Members: []string{"a", "b"}, Holders: map[int]string{0: "a", 1: "a", 3: "a"}},
			want: shard.Decision{Take: []int{2}},
		},
		{
			name: "gives up shards above its quota when a replica joins, others' first",
			view: shard.View{Count: 4, Self: "a", Members: []string{"a", "b"}, Held: []int{0, 1, 2, 3}, Holders: map[int]string{}},
			want: shard.Decision{Release: []int{1, 3}},
		},
		{
			name: "stops campaigning for a shard another replica took",
			view: shard.View{Count: 2, Self: "a", Members: []string{"a", "b"}, Campaigns: []int{0}, Holders: map[int]string{0: "b"}},
			want: shard.Decision{Take: []int{1}, Abandon: []int{0}},
		},
		{
			name: "stops campaigning above its quota",
			view: shard.View{Count: 4, Self: "a", Members: []string{"a", "b"}, Held: []int{0}, Campaigns: []int{1, 2, 3}, Holders: map[int]string{}},
			want: shard.Decision{Abandon: []int{1, 3}},
		},
		{
			name: "holds its quota: nothing to do",
			view: shard.View{Count: 8, Self: "c", Members: []string{"a", "b", "c"}, Held: []int{2, 5}, Holders: map[int]string{0: "a", 1: "b"}},
			want: shard.Decision{},
		},
		{
			name: "more replicas than shards: one without a quota takes none",
			view: shard.View{Count: 2, Self: "c", Members: []string{"a", "b", "c"}, Holders: map[int]string{}},
			want: shard.Decision{},
		},
		{
			name: "more replicas than shards: one without a quota gives its up",
			view: shard.View{Count: 2, Self: "c", Members: []string{"a", "b", "c"}, Held: []int{1}, Holders: map[int]string{0: "a"}},
			want: shard.Decision{Release: []int{1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shard.Plan(tc.view)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.want.IsZero(), got.IsZero())
		})
	}
}

// cluster simulates replicas that plan on one consistent view, and
// Leases that give each shard to one campaigner: the first in each
// round's order, as the API server's optimistic writes do.
type cluster struct {
	count   int
	members []string
	holder  map[int]string
	// campaigns are each member's shards it campaigns for.
	campaigns map[string][]int
}

func newCluster(count int, members ...string) *cluster {
	return &cluster{count: count, members: members, holder: map[int]string{}, campaigns: map[string][]int{}}
}

// round runs one Plan per member, in order, then settles each shard
// campaigned for and free, and reports whether anything changed.
func (c *cluster) round(order []string) bool {
	changed := false
	for _, m := range order {
		v := shard.View{Count: c.count, Self: m, Members: c.members, Holders: map[int]string{}, Campaigns: c.campaigns[m]}
		for s, h := range c.holder {
			if h == m {
				v.Held = append(v.Held, s)
			} else {
				v.Holders[s] = h
			}
		}
		d := shard.Plan(v)
		if d.IsZero() {
			continue
		}
		changed = true
		for _, s := range d.Release {
			delete(c.holder, s)
		}
		c.campaigns[m] = slices.DeleteFunc(c.campaigns[m], func(s int) bool { return slices.Contains(d.Abandon, s) })
		c.campaigns[m] = append(c.campaigns[m], d.Take...)
	}
	for _, m := range order {
		var still []int
		for _, s := range c.campaigns[m] {
			if _, taken := c.holder[s]; !taken {
				c.holder[s] = m
				changed = true
				continue
			}
			still = append(still, s)
		}
		c.campaigns[m] = still
	}
	return changed
}

// settle runs rounds until nothing changes, at most limit of them, and
// returns how many it took.
func (c *cluster) settle(t *testing.T, limit int) int {
	t.Helper()
	for i := range limit {
		order := slices.Clone(c.members)
		// Each round in another order, as replicas' timers fire.
		for j := range i % len(order) {
			order = append(order[1:], order[0])
			_ = j
		}
		if !c.round(order) {
			return i
		}
	}
	t.Fatalf("no settlement in %d rounds: holders %v", limit, c.holder)
	return limit
}

// balanced fails the test unless every shard is held, each by a member,
// and each member holds its quota.
func (c *cluster) balanced(t *testing.T) {
	t.Helper()
	require.Len(t, c.holder, c.count, "every shard is held")
	held := map[string]int{}
	for _, m := range c.holder {
		require.Contains(t, c.members, m)
		held[m]++
	}
	for _, m := range c.members {
		require.Equal(t, shard.Quota(c.members, m, c.count), held[m], "%s's shards, of %v", m, c.members)
	}
}

func TestPlanConverges(t *testing.T) {
	for _, count := range []int{1, 2, 4, 8, 16, 64} {
		t.Run(fmt.Sprint(count), func(t *testing.T) {
			c := newCluster(count, "r0")
			c.settle(t, 10)
			c.balanced(t)
			// Replicas join one by one, up to more than there are shards.
			for n := 1; n < 6; n++ {
				c.members = append(c.members, fmt.Sprintf("r%d", n))
				c.settle(t, 10)
				c.balanced(t)
			}
			// And leave: the first, then the last, as a rollout does; a
			// leaver's shards are free once its Leases expire.
			for len(c.members) > 1 {
				gone := c.members[0]
				if len(c.members)%2 == 0 {
					gone = c.members[len(c.members)-1]
				}
				c.members = slices.DeleteFunc(c.members, func(m string) bool { return m == gone })
				for s, h := range c.holder {
					if h == gone {
						delete(c.holder, s)
					}
				}
				delete(c.campaigns, gone)
				c.settle(t, 10)
				c.balanced(t)
			}
		})
	}
}

// TestPlanMovesFewShards checks that a join moves only what it must:
// from a balanced 3 of 8 shards to 4 replicas, only the new replica's two
// shards change hands.
func TestPlanMovesFewShards(t *testing.T) {
	c := newCluster(8, "a", "b", "c")
	c.settle(t, 10)
	before := map[int]string{}
	for s, h := range c.holder {
		before[s] = h
	}
	c.members = append(c.members, "d")
	c.settle(t, 10)
	c.balanced(t)
	moved := 0
	for s, h := range c.holder {
		if before[s] != h {
			moved++
			require.Equal(t, "d", h, "shard %d moved to %s, not to the new replica", s, h)
		}
	}
	require.Equal(t, 2, moved)
}
