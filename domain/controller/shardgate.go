package controller

import (
	"context"
	"sync"
	"time"

	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// shardGate admits a pass over an object only while the replica holds the
// object's shard, and counts the passes in flight on each shard, so a
// shard is given up only once none is left: never two replicas
// reconciling one object at once. An unsharded controller's gate, of count
// 0, has every object in shard 0, held while the controller serves: it
// only counts the passes in flight, for a stop's stuck passes' report.
type shardGate struct {
	count int
	// now times each pass's start, for a stuck pass's report.
	now func() time.Time

	mu sync.Mutex
	// shards are the shards held; left those that stopped admitting
	// passes and still drain.
	shards, left map[int]*heldShard
}

// heldShard is a shard the replica holds, and its passes in flight.
type heldShard struct {
	inFlight int
	next     uint64
	passes   map[uint64]gatedPass
	// left is set once the shard stopped admitting passes; empty is
	// closed once it has and none is in flight.
	left  bool
	empty chan struct{}
}

// gatedPass is one pass in flight: what cancels it, its object's key and
// shard, and when it began.
type gatedPass struct {
	cancel  context.CancelCauseFunc
	key     ports.Key
	shard   int
	started time.Time
}

func newShardGate(count int, now func() time.Time) *shardGate {
	return &shardGate{count: count, now: now, shards: map[int]*heldShard{}, left: map[int]*heldShard{}}
}

// admit returns the context a pass over obj, of key, runs in, carrying its
// shard when the controller is sharded and cancelled when the shard is lost, and the function that ends the
// pass; it reports false, and runs nothing, when the replica doesn't hold
// obj's shard.
func (g *shardGate) admit(ctx context.Context, key ports.Key, obj ports.Object) (context.Context, func(), bool) {
	s := shard.Of(string(obj.UID), g.count)
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.shards[s]
	if !ok {
		return ctx, nil, false
	}
	if g.count > 0 {
		ctx = ports.ContextWithShard(ctx, s)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	h.next++
	id := h.next
	h.passes[id] = gatedPass{cancel: cancel, key: key, shard: s, started: g.now()}
	h.inFlight++
	return ctx, func() {
		g.mu.Lock()
		delete(h.passes, id)
		h.inFlight--
		if h.left && h.inFlight == 0 {
			close(h.empty)
		}
		g.mu.Unlock()
		cancel(nil)
	}, true
}

// hold admits the passes over shard s's objects from now on.
func (g *shardGate) hold(s int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.shards[s]; !ok {
		g.shards[s] = &heldShard{passes: map[uint64]gatedPass{}, empty: make(chan struct{})}
	}
}

// leave stops admitting passes over shard s's objects, and returns the
// channel closed once none of its passes is in flight: closed already
// when the replica didn't hold s.
func (g *shardGate) leave(s int) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.shards[s]
	if !ok {
		done := make(chan struct{})
		close(done)
		return done
	}
	delete(g.shards, s)
	h.left = true
	g.left[s] = h
	if h.inFlight == 0 {
		close(h.empty)
	}
	return h.empty
}

// cancel cancels, with cause, the passes of shard s in flight since it
// left.
func (g *shardGate) cancel(s int, cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h, ok := g.left[s]; ok {
		for _, p := range h.passes {
			p.cancel(cause)
		}
	}
}

// draining returns the passes of shard s in flight since it left.
func (g *shardGate) draining(s int) []gatedPass {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.left[s]
	if !ok {
		return nil
	}
	out := make([]gatedPass, 0, len(h.passes))
	for _, p := range h.passes {
		out = append(out, p)
	}
	return out
}

// all returns every pass in flight, of the shards held and those that
// still drain.
func (g *shardGate) all() []gatedPass {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []gatedPass
	for _, held := range []map[int]*heldShard{g.shards, g.left} {
		for _, h := range held {
			for _, p := range h.passes {
				out = append(out, p)
			}
		}
	}
	return out
}

// forget drops what the gate knows of shard s once it has drained.
func (g *shardGate) forget(s int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.left, s)
}
