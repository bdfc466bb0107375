package ports

// Queue is the controller's work queue of keys, as adapters/queue builds
// it on client-go's work queue: it holds each key once however often it
// is added, and never hands a worker a key another worker is processing.
// A key added while it is processed is handed out again once it is Done.
//
// It has three classes. A key added as a change goes ahead of the others,
// so the object a user just changed isn't reconciled after the thousands
// of keys a new leader queues from its first lists. A requeue — a retry
// or an After whose time came — goes behind the changes but ahead of the
// background, the first lists' and the resyncs' keys, which no change and
// no pass asked for: a key the controller asked to see again at a time is
// reconciled then, not after a whole initial list. A key is handed out at
// the highest class of the adds it answers. The lower classes still
// drain: while they wait, the queue hands one of their keys out after a
// bounded run of the classes above.
//
// Delays — a retry's backoff, a Result's After — are the domain's own
// timers, which add a key as a requeue when they fire, so a change can
// cancel them.
type Queue interface {
	// Add queues key as a change: an object added, updated or deleted, or
	// a related object's change that maps to it. A key already waiting in
	// the background moves ahead with the changes.
	Add(key Key)
	// AddRequeue queues key as a requeue, behind the changes and ahead
	// of the background: a retry or an After that came due, or a key
	// queued again at once because what failed it no longer applies. A
	// key already waiting in the background moves ahead with the
	// requeues; one waiting as a change or a requeue keeps its place.
	AddRequeue(key Key)
	// AddBackground queues key behind the changes and the requeues: an
	// object of an informer's first list, or a resync. A key already
	// waiting as a change or a requeue keeps its place.
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
