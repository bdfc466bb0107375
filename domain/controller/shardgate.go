package controller

import (
	"context"
	"sync"

	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// shardGate admits a pass over an object only while the replica holds the
// object's shard, and counts the passes in flight on each shard, so a
// shard is given up only once none is left: never two replicas
// reconciling one object at once.
type shardGate struct {
	count int

	mu     sync.Mutex
	shards map[int]*heldShard
}

// heldShard is a shard the replica holds, and its passes in flight.
type heldShard struct {
	wg     sync.WaitGroup
	next   uint64
	passes map[uint64]context.CancelCauseFunc
}

func newShardGate(count int) *shardGate {
	return &shardGate{count: count, shards: map[int]*heldShard{}}
}

// admit returns the context a pass over obj runs in, carrying its shard
// and cancelled when the shard is lost, and the function that ends the
// pass; it reports false, and runs nothing, when the replica doesn't hold
// obj's shard.
func (g *shardGate) admit(ctx context.Context, obj ports.Object) (context.Context, func(), bool) {
	s := shard.Of(string(obj.UID), g.count)
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.shards[s]
	if !ok {
		return ctx, nil, false
	}
	ctx, cancel := context.WithCancelCause(ports.ContextWithShard(ctx, s))
	h.next++
	id := h.next
	h.passes[id] = cancel
	h.wg.Add(1)
	return ctx, func() {
		g.mu.Lock()
		delete(h.passes, id)
		g.mu.Unlock()
		cancel(nil)
		h.wg.Done()
	}, true
}

// hold admits the passes over shard s's objects from now on.
func (g *shardGate) hold(s int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.shards[s]; !ok {
		g.shards[s] = &heldShard{passes: map[uint64]context.CancelCauseFunc{}}
	}
}

// drain stops admitting passes over shard s's objects and waits for those
// in flight to return, cancelling them with cause first when cause isn't
// nil.
func (g *shardGate) drain(s int, cause error) {
	g.mu.Lock()
	h, ok := g.shards[s]
	delete(g.shards, s)
	if ok && cause != nil {
		for _, cancel := range h.passes {
			cancel(cause)
		}
	}
	g.mu.Unlock()
	if ok {
		// No pass is admitted to h once it left the map, so the count only
		// falls.
		h.wg.Wait()
	}
}
