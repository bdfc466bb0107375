package ports

import (
	"context"
	"strconv"
	"time"
)

// LeaseRecord is one of a sharded controller's Leases as the API server
// last sent it: a replica's membership Lease, or a shard's.
type LeaseRecord struct {
	// Name is the Lease's name.
	Name string
	// Shard is the shard the Lease is for, or -1 for a replica's
	// membership Lease.
	Shard int
	// Holder is spec.holderIdentity: "" when no replica holds it.
	Holder string
	// Renewed is spec.renewTime.
	Renewed time.Time
	// Duration is spec.leaseDurationSeconds.
	Duration time.Duration
	// Count is the number of shards the Lease's last holder ran with, as
	// it recorded it on the Lease; 0 when the Lease doesn't say.
	Count int
}

// ShardLeases are a sharded controller's Leases: one for each replica's
// membership, which announces it to the others, and one for each shard,
// held by the replica that reconciles the shard's objects. Every Lease
// carries the controller's number of shards.
type ShardLeases interface {
	// Holder is the identity this replica holds its Leases under: its
	// own, made unique to this process, so two processes started with
	// one identity never both hold a Lease.
	Holder() string
	// Member returns the Elector of this replica's membership Lease.
	Member() Elector
	// Shard returns the Elector of shard i's Lease. expired says whether
	// the Lease as the Elector reads it, held by another, was seen
	// unrenewed for its whole duration: the Elector takes such a Lease at
	// once, with an update conditional on what it read, rather than
	// watching it expire again itself.
	Shard(i int, expired func(LeaseRecord) bool) Elector
	// Check lists the controller's Leases once, with a limit of 1, and
	// returns an error naming them when they can't be listed, such as
	// when RBAC doesn't let the replica list or watch Leases.
	Check(ctx context.Context) error
	// Start watches the controller's Leases until ctx is done or Stop is
	// called, calling changed after each change it sees. changed must not
	// block. Start is called once.
	Start(ctx context.Context, changed func())
	// WaitForSync blocks until the watch holds what its first list
	// returned, and reports whether it did before ctx was done.
	WaitForSync(ctx context.Context) bool
	// Records returns every Lease of the controller, as last seen.
	Records() []LeaseRecord
	// Stop stops the watch and waits for its goroutines to return.
	Stop()
}

// ShardChange is what happened to one of a replica's shards.
type ShardChange int

const (
	// ShardAcquired is a shard whose Lease the replica took: it
	// reconciles the shard's objects from now on.
	ShardAcquired ShardChange = iota + 1
	// ShardReleased is a shard the replica gave up, once its reconciles
	// were done, so another replica may take it.
	ShardReleased
	// ShardLost is a shard whose Lease the replica lost without giving
	// it up: another replica may reconcile its objects already.
	ShardLost
)

// String returns "acquired", "released" or "lost".
func (c ShardChange) String() string {
	switch c {
	case ShardAcquired:
		return "acquired"
	case ShardReleased:
		return "released"
	case ShardLost:
		return "lost"
	}
	return "ShardChange(" + strconv.Itoa(int(c)) + ")"
}

// shardKey is the context key of a reconcile's shard.
type shardKey struct{}

// ContextWithShard returns ctx carrying shard, the shard of the object a
// reconcile in ctx runs on, for the Recorder to report.
func ContextWithShard(ctx context.Context, shard int) context.Context {
	return context.WithValue(ctx, shardKey{}, shard)
}

// ShardFromContext returns the shard ctx carries, and false when it
// carries none: the controller isn't sharded.
func ShardFromContext(ctx context.Context) (int, bool) {
	s, ok := ctx.Value(shardKey{}).(int)
	return s, ok
}
