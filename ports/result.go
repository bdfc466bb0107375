package ports

import "time"

// Result is what a Handler's Reconcile returns for its object.
type Result struct {
	// Status is the JSON encoding of the object's status as Reconcile left
	// it, applied when it differs from the cached object's. Nil leaves the
	// status alone, so an error path that returns no status can't wipe it.
	Status []byte
	// After, when positive and Reconcile returned no error, reconciles the
	// object again after that long, unless it changes first.
	After time.Duration
}
