// Package shard splits a controller's objects into shards and decides
// which shards a replica holds: pure functions, over KEP-5866's hash
// space. An object's shard is read from the 64-bit FNV-1a hash of its
// metadata.uid, the hash the API server's sharded list and watch compare
// with a ShardSelector's ranges (k8s.io/apimachinery/pkg/sharding), so a
// replica that filters its cache itself and a server that filters its
// watch agree on every object.
//
// A controller has Count shards, a power of two, so shard i is the hash
// range [i·2⁶⁴/Count, (i+1)·2⁶⁴/Count): the top log2(Count) bits of the
// hash. Who holds a shard is its Lease's business; Plan only says which
// shards a replica should campaign for and which it should give up, from
// what it sees of the others.
package shard

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"strings"
)

// MaxCount is the most shards a controller may have. Every shard is a
// Lease its holder renews every RetryPeriod, so 256 shards renewed every
// 2 seconds are 128 writes a second to the API server, whoever holds
// them: more shards than that cost more than they spread.
const MaxCount = 256

// CheckCount reports whether count can be a controller's number of
// shards: a power of two from 1 to MaxCount. The error reads after the
// field's name.
func CheckCount(count int) error {
	if count < 1 || count > MaxCount || count&(count-1) != 0 {
		return fmt.Errorf("is %d: want a power of two from 1 to %d (or 0, for no sharding)", count, MaxCount)
	}
	return nil
}

// Hash returns the 64-bit FNV-1a hash of uid: the hash KEP-5866's
// shardRange compares, which apimachinery's sharding.HashField prints in
// hex.
func Hash(uid string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid)) // A hash's Write never fails.
	return h.Sum64()
}

// Of returns the shard, of count, of the object whose metadata.uid is
// uid. count must pass CheckCount.
func Of(uid string, count int) int {
	if count <= 1 {
		return 0
	}
	return int(Hash(uid) >> (64 - bits.TrailingZeros(uint(count))))
}

// Range returns shard i's hash range, of count, as KEP-5866's selector
// writes its bounds: 0x-prefixed, 16 lowercase hex digits, and the end
// exclusive, "0x10000000000000000" (2⁶⁴) for the last shard.
func Range(i, count int) (start, end string) {
	return bound(i, count), bound(i+1, count)
}

// bound returns the hash at which shard i of count starts.
func bound(i, count int) string {
	if i >= count {
		return "0x10000000000000000"
	}
	width := 64 - bits.TrailingZeros(uint(count))
	if width == 64 {
		return "0x0000000000000000"
	}
	return fmt.Sprintf("0x%016x", uint64(i)<<width)
}

// Field is the field the shards hash, as a ShardSelector names it.
const Field = "object.metadata.uid"

// None is the ShardSelector of a replica that holds no shard: the range
// of the one hash 0, since the API server reads an empty selector as
// every object and refuses an empty range. An object whose uid hashes to
// 0, one in 2⁶⁴, is sent, and the replica's own shard check skips it.
const None = "shardRange(" + Field + ", '0x0000000000000000', '0x0000000000000001')"

// Narrow returns the ShardSelector of a replica that holds shards, of
// count: Selector's, or None when it holds none.
func Narrow(shards []int, count int) string {
	if s := Selector(shards, count); s != "" {
		return s
	}
	return None
}

// Selector returns the ShardSelector of a list or watch that sends only
// the objects of shards, of count: the OR of their ranges, with adjacent
// shards merged into one range, in ascending order. It returns "" for no
// shard, which a caller must not send: the API server reads "" as every
// object; Narrow sends None instead.
func Selector(shards []int, count int) string {
	held := make([]bool, count+1)
	for _, s := range shards {
		if s >= 0 && s < count {
			held[s] = true
		}
	}
	var ranges []string
	for i := 0; i < count; i++ {
		if !held[i] {
			continue
		}
		j := i
		for held[j+1] {
			j++
		}
		ranges = append(ranges, fmt.Sprintf("shardRange(%s, '%s', '%s')", Field, bound(i, count), bound(j+1, count)))
		i = j
	}
	return strings.Join(ranges, " || ")
}
