package ports

import "context"

// Event is what a Watch tells the controller of one of its objects.
type Event struct {
	// Key names the object to reconcile: the one that changed, or the one
	// that controls an owned object that changed.
	Key Key
	// Resync is true when the informer's periodic resync handed the object
	// again unchanged, and false for a change: an object added, deleted,
	// or updated with a new resourceVersion, the controller's own status
	// writes included. A change cancels a key's pending retry or After; a
	// resync doesn't.
	Resync bool
}

// Watch is the controller's informers: one on the resource it reconciles,
// whose cache is its ObjectSource, and one on each resource it owns.
type Watch interface {
	ObjectSource
	// Check lists the resource and each owned resource once, with a limit
	// of 1, and returns an error naming the first that can't be listed,
	// such as a CRD that isn't installed.
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
	Stop()
}
