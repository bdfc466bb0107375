package shard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

func TestTrackerCountsLeasesLiveByWhenItSawThemChange(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	// Another replica's clock is an hour behind: renewTime never decides.
	skewed := t0.Add(-time.Hour)
	member := func(holder string, renewed time.Time) ports.LeaseRecord {
		return ports.LeaseRecord{Name: "c-member-" + holder, Shard: -1, Holder: holder, Renewed: renewed, Duration: 15 * time.Second, Count: 4}
	}
	shardLease := func(i int, holder string, renewed time.Time) ports.LeaseRecord {
		return ports.LeaseRecord{Name: "c-shard-" + string(rune('0'+i)), Shard: i, Holder: holder, Renewed: renewed, Duration: 15 * time.Second, Count: 4}
	}
	var tr shard.Tracker

	o := tr.Observe([]ports.LeaseRecord{member("b", skewed), member("a", skewed), shardLease(0, "a", skewed), shardLease(1, "", skewed)}, 4, t0)
	require.Equal(t, []string{"a", "b"}, o.Members)
	require.Equal(t, map[int]string{0: "a"}, o.Holders, "a Lease with no holder is free")
	require.Equal(t, t0.Add(15*time.Second), o.Next)

	// b renews; a doesn't: 15s after it was first seen, a's Leases expire.
	o = tr.Observe([]ports.LeaseRecord{member("b", skewed.Add(10*time.Second)), member("a", skewed), shardLease(0, "a", skewed)}, 4, t0.Add(10*time.Second))
	require.Equal(t, []string{"a", "b"}, o.Members)
	require.Equal(t, t0.Add(15*time.Second), o.Next)
	o = tr.Observe([]ports.LeaseRecord{member("b", skewed.Add(10*time.Second)), member("a", skewed), shardLease(0, "a", skewed)}, 4, t0.Add(15*time.Second))
	require.Equal(t, []string{"b"}, o.Members)
	require.Empty(t, o.Holders)
	require.Equal(t, t0.Add(25*time.Second), o.Next)

	// A deleted Lease is forgotten: seen again, it is new.
	o = tr.Observe([]ports.LeaseRecord{member("b", skewed.Add(10*time.Second))}, 4, t0.Add(16*time.Second))
	require.Equal(t, []string{"b"}, o.Members)
	o = tr.Observe([]ports.LeaseRecord{member("b", skewed.Add(10*time.Second)), member("a", skewed)}, 4, t0.Add(17*time.Second))
	require.Equal(t, []string{"a", "b"}, o.Members)
}

func TestTrackerReportsReplicasWithAnotherCount(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	other := ports.LeaseRecord{Name: "c-member-x", Shard: -1, Holder: "x", Renewed: t0, Duration: 15 * time.Second, Count: 8}
	var tr shard.Tracker
	o := tr.Observe([]ports.LeaseRecord{other}, 4, t0)
	require.Empty(t, o.Members, "a replica with another count is no member")
	require.Equal(t, []shard.Mismatch{{LeaseRecord: other, Renewed: false}}, o.Mismatched, "seen once: perhaps a stopped replica's")

	renewed := other
	renewed.Renewed = t0.Add(2 * time.Second)
	o = tr.Observe([]ports.LeaseRecord{renewed}, 4, t0.Add(2*time.Second))
	require.Equal(t, []shard.Mismatch{{LeaseRecord: renewed, Renewed: true}}, o.Mismatched, "renewed: its replica runs")

	o = tr.Observe([]ports.LeaseRecord{renewed}, 4, t0.Add(17*time.Second))
	require.Empty(t, o.Mismatched, "expired")
}
