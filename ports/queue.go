package ports

// Queue is the controller's work queue of keys, as adapters/queue builds
// it on client-go's work queue: it holds each key once however often it
// is added, and never hands a worker a key another worker is processing.
// A key added while it is processed is handed out again once it is Done.
//
// It has two priorities. A key added as a change goes ahead of the keys
// added in the background, so the object a user just changed isn't
// reconciled after the thousands of keys a new leader queues from its
// first lists; a key is handed out at the higher priority of the adds it
// answers. Background keys still drain: while they wait, the queue hands
// out one after a bounded run of changes.
//
// Delays — a retry's backoff, a Result's After — are the domain's own
// timers, which add a key in the background when they fire, so a change
// can cancel them.
type Queue interface {
	// Add queues key as a change: an object added, updated or deleted, or
	// a related object's change that maps to it. A key already waiting in
	// the background moves ahead with the changes.
	Add(key Key)
	// AddBackground queues key behind the changes: an object of an
	// informer's first list, a resync, a retry or an After. A key already
	// waiting as a change keeps its place.
	AddBackground(key Key)
	// Get blocks until a key is ready, and returns it; shutdown is true
	// once the queue has been shut down.
	Get() (key Key, shutdown bool)
	// Done marks key as processed, so it can be handed out again.
	Done(key Key)
	// ShutDown makes Get return shutdown to every worker, without waiting
	// for the queue to drain.
	ShutDown()
}
