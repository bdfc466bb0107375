package shard_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/domain/shard"
)

func TestCheckCount(t *testing.T) {
	for _, tc := range []struct {
		count int
		ok    bool
	}{
		{1, true}, {2, true}, {4, true}, {64, true}, {256, true},
		{0, false}, {-2, false}, {3, false}, {6, false}, {512, false},
	} {
		err := shard.CheckCount(tc.count)
		if tc.ok {
			require.NoError(t, err, "count %d", tc.count)
			continue
		}
		require.EqualError(t, err, fmt.Sprintf("is %d: want a power of two from 1 to 256 (or 0, for no sharding)", tc.count))
	}
}

// uids returns n uids as the API server writes them.
func uids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%08x-1f2e-4d3c-8b7a-%012x", i*2654435761, i)
	}
	return out
}

// TestOfAgreesWithTheAPIServer pins Of and Range to apimachinery's
// sharding package, which the API server filters with: every object is in
// exactly the range of its shard, at every count.
func TestOfAgreesWithTheAPIServer(t *testing.T) {
	for _, count := range []int{1, 2, 4, 8, 256} {
		for _, uid := range uids(500) {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid)}}
			require.Equal(t, "0x"+sharding.HashField(uid), fmt.Sprintf("0x%016x", shard.Hash(uid)))
			of := shard.Of(uid, count)
			require.GreaterOrEqual(t, of, 0)
			require.Less(t, of, count)
			for i := range count {
				start, end := shard.Range(i, count)
				sel := sharding.NewSelector(sharding.ShardRangeRequirement{Key: shard.Field, Start: start, End: end})
				in, err := sel.Matches(obj)
				require.NoError(t, err)
				require.Equal(t, i == of, in, "uid %s, shard %d of %d: range [%s, %s)", uid, i, count, start, end)
			}
		}
	}
}

func TestRange(t *testing.T) {
	for _, tc := range []struct {
		i, count   int
		start, end string
	}{
		{0, 1, "0x0000000000000000", "0x10000000000000000"},
		{0, 2, "0x0000000000000000", "0x8000000000000000"},
		{1, 2, "0x8000000000000000", "0x10000000000000000"},
		{2, 4, "0x8000000000000000", "0xc000000000000000"},
		{255, 256, "0xff00000000000000", "0x10000000000000000"},
	} {
		start, end := shard.Range(tc.i, tc.count)
		require.Equal(t, tc.start, start, "shard %d of %d", tc.i, tc.count)
		require.Equal(t, tc.end, end, "shard %d of %d", tc.i, tc.count)
	}
}

func TestSelector(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards []int
		count  int
		want   []sharding.ShardRangeRequirement
	}{
		{"none", nil, 4, nil},
		{"one", []int{2}, 4, []sharding.ShardRangeRequirement{{Key: shard.Field, Start: "0x8000000000000000", End: "0xc000000000000000"}}},
		{"adjacent merge", []int{1, 0}, 4, []sharding.ShardRangeRequirement{{Key: shard.Field, Start: "0x0000000000000000", End: "0x8000000000000000"}}},
		{"every shard", []int{0, 1, 2, 3}, 4, []sharding.ShardRangeRequirement{{Key: shard.Field, Start: "0x0000000000000000", End: "0x10000000000000000"}}},
		{"apart", []int{3, 0}, 4, []sharding.ShardRangeRequirement{
			{Key: shard.Field, Start: "0x0000000000000000", End: "0x4000000000000000"},
			{Key: shard.Field, Start: "0xc000000000000000", End: "0x10000000000000000"},
		}},
		{"out of range ignored", []int{-1, 4, 1}, 4, []sharding.ShardRangeRequirement{{Key: shard.Field, Start: "0x4000000000000000", End: "0x8000000000000000"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shard.Selector(tc.shards, tc.count)
			if tc.want == nil {
				require.Empty(t, got)
				return
			}
			// The wire format is apimachinery's own.
			require.Equal(t, sharding.NewSelector(tc.want...).String(), got)
		})
	}
}
