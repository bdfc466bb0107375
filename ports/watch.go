package ports

import "context"

// Event is what a Watch tells the controller of one of its objects.
type Event struct {
	// Key names the object to reconcile: the one that changed, the one
	// that controls an owned object that changed, or one that a related
	// object's change maps to.
	Key Key
	// Resync is true when the informer's periodic resync handed the object
	// again unchanged, and false for a change: an object added, deleted,
	// or updated with a new resourceVersion, the controller's own status
	// writes included. A change cancels a key's pending retry or After; a
	// resync doesn't.
	Resync bool
	// Initial is true for an object an informer's first list handed it,
	// which a new leader has thousands of: they wait behind the changes
	// that come while they drain.
	Initial bool
	// Cause, when not zero, is the related object whose change queued
	// Key. It is zero for the Controller's own objects, for the objects it
	// owns, and for resyncs: those say why by themselves.
	Cause Cause
}

// Cause names a related object whose change queued a key: an object of a
// resource the Controller watches without owning it, such as a ConfigMap
// its objects read. The reconcile it queues reports it, so a reconcile
// that no change of its own object explains can be traced to one.
type Cause struct {
	// Resource names the related resource as its GroupResource's String()
	// reads: configmaps, or memcacheds.cache.example.com.
	Resource string
	// Key names the related object.
	Key Key
}

// IsZero reports whether c names no object: the Cause of an event that no
// related change caused.
func (c Cause) IsZero() bool { return c == Cause{} }

// String returns the resource and the object's key, separated by a space.
func (c Cause) String() string { return c.Resource + " " + c.Key.String() }

// Watch is the controller's informers: one on the resource it reconciles,
// whose cache is its ObjectSource, one on each resource it owns, and one on
// each related resource it watches.
type Watch interface {
	ObjectSource
	// Check lists the resource and each owned and related resource once,
	// with a limit of 1, and returns an error naming the first that can't
	// be listed, such as a CRD that isn't installed.
	Check(ctx context.Context) error
	// Start runs every informer, each in a goroutine of its own, until ctx
	// is done or Stop is called, telling notify of each event. notify is
	// called from the informers' goroutines and must not block for long.
	// Start is called once.
	Start(ctx context.Context, notify func(Event))
	// WaitForSync blocks until every informer's cache holds what its first
	// list returned, and reports whether they did before ctx was done.
	WaitForSync(ctx context.Context) bool
	// Stop stops every informer and waits for their goroutines to return.
	// It may be called without Start, and then only lets go of what the
	// Watch asked of informers it shares with other Watches.
	Stop()
	// Hold makes a sharded controller's Watch hold shard s: it notifies
	// the changes of the shard's objects, and of the objects they own,
	// from now on, and every object of the shard it caches as an initial
	// event, as a start-up does. It must not block for long. Holds of
	// one shard count: the shard is given up at the last of as many
	// Releases, so a Hold that runs before the previous holding's
	// Release leaves it held and watched. An unsharded Watch ignores it.
	Hold(s int)
	// Release makes a sharded controller's Watch give up shard s, at the
	// last Release of its Holds: it no longer notifies the changes of the
	// shard's objects, and may drop them from its cache. An unsharded
	// Watch ignores it.
	Release(s int)
}
