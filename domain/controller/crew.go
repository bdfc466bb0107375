package controller

import (
	"context"
	"sync"

	"github.com/loam-dev/loam/domain/reconcile"
)

// crew is the leader's workers, each taking keys from the loop until it
// stops. Its goroutines are owned by Serve, which waits for them.
type crew struct {
	loop *reconcile.Loop
	// gate admits the workers' passes and counts those in flight.
	gate   *shardGate
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	stopped bool
	lost    bool
	wg      sync.WaitGroup
}

// start starts n workers, and reports whether it did: not once the crew
// has stopped.
func (w *crew) start(n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	for range n {
		w.wg.Go(func() {
			for w.loop.Next(w.ctx) {
			}
		})
	}
	return true
}

// stop stops the workers taking keys; the reconciles in flight go on.
func (w *crew) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.loop.Stop()
}

// lose stops the workers and cancels the reconciles in flight, since the
// Lease is lost.
func (w *crew) lose() {
	w.mu.Lock()
	w.lost = true
	w.mu.Unlock()
	w.stop()
	w.cancel(ErrLostLeadership)
}

// hasLost reports whether lose was called.
func (w *crew) hasLost() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lost
}

// wait waits for every worker to return. Call it only after stop.
func (w *crew) wait() { w.wg.Wait() }
