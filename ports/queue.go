package ports

import "time"

// Queue is the controller's work queue of keys, as client-go's
// workqueue.TypedRateLimitingInterface[Key] is, which implements it: it
// holds each key once however often it is added, and never hands a worker
// a key another worker is processing. A key added while it is processed is
// handed out again once it is Done.
type Queue interface {
	// Add queues key now.
	Add(key Key)
	// AddAfter queues key once d has passed.
	AddAfter(key Key, d time.Duration)
	// AddRateLimited queues key after its backoff, which grows with each
	// failure until Forget.
	AddRateLimited(key Key)
	// Forget ends key's backoff: its next failure starts it again.
	Forget(key Key)
	// NumRequeues returns how many times key has failed since it was last
	// forgotten.
	NumRequeues(key Key) int
	// Get blocks until a key is ready, and returns it; shutdown is true
	// once the queue has been shut down.
	Get() (key Key, shutdown bool)
	// Done marks key as processed, so it can be handed out again.
	Done(key Key)
	// Len returns the number of keys waiting.
	Len() int
	// ShutDown makes Get return shutdown to every worker, without waiting
	// for the queue to drain.
	ShutDown()
}
