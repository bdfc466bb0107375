package controller

import (
	"slices"
	"sync"
	"time"

	"github.com/loam-dev/loam/ports"
)

// How a sharded replica narrows its watch to the shards it holds. Every
// narrowing relists the primary informer, and client-go's reflector backs
// off before each relist, twice as long each time within two minutes of
// the last (from 0.8s, jittered up to twice that), during which the watch
// carries nothing new: narrowing at every shard taken or given up would
// leave a replica blind for longer and longer while shards move. So the
// replica narrows once its shards have settled: narrowSettle after the
// last change, and at most narrowMaxWait after the first, so a rebalance
// costs each replica one relist. Until then the watch may still carry
// shards given up, whose objects the shard gate never lets a worker
// reconcile, or not yet carry shards taken, whose objects a relist brings.
const (
	narrowSettle  = 500 * time.Millisecond
	narrowMaxWait = 5 * time.Second
)

// narrower tells Config.Narrow the shards a replica's watch should carry,
// as the comment above says. It is safe for concurrent use.
type narrower struct {
	clock  ports.Clock
	narrow func(held []int)

	mu sync.Mutex
	// held is what the replica holds; listed what its watch carries.
	held, listed []int
	// stop cancels the pending narrowing, if any, which first waits since
	// first.
	stop  func() bool
	first time.Time
}

func newNarrower(clock ports.Clock, narrow func([]int)) *narrower {
	return &narrower{clock: clock, narrow: narrow}
}

// set records that the replica now holds held, and narrows the watch to
// it once the shards settle.
func (n *narrower) set(held []int) {
	if n.narrow == nil {
		return
	}
	held = slices.Sorted(slices.Values(held))
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held = held
	now := n.clock.Now()
	if n.stop != nil {
		n.stop()
	} else {
		n.first = now
	}
	wait := min(narrowSettle, n.first.Add(narrowMaxWait).Sub(now))
	n.stop = n.clock.AfterFunc(max(wait, 0), n.fire)
}

// fire narrows the watch to what is held, unless it carries that already.
func (n *narrower) fire() {
	n.mu.Lock()
	n.stop = nil
	held := slices.Clone(n.held)
	changed := !slices.Equal(held, n.listed)
	n.listed = held
	n.mu.Unlock()
	if changed {
		n.narrow(held)
	}
}

// close cancels the pending narrowing.
func (n *narrower) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		n.stop()
		n.stop = nil
	}
}
