package ports

// Queue is the controller's work queue of keys, as client-go's
// workqueue.TypedInterface[Key] is, which implements it: it holds each key
// once however often it is added, and never hands a worker a key another
// worker is processing. A key added while it is processed is handed out
// again once it is Done. Delays — a retry's backoff, a Result's After —
// are the domain's own timers, which Add a key when they fire, so a change
// can cancel them.
type Queue interface {
	// Add queues key now.
	Add(key Key)
	// Get blocks until a key is ready, and returns it; shutdown is true
	// once the queue has been shut down.
	Get() (key Key, shutdown bool)
	// Done marks key as processed, so it can be handed out again.
	Done(key Key)
	// ShutDown makes Get return shutdown to every worker, without waiting
	// for the queue to drain.
	ShutDown()
}
