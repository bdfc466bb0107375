package explore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/loam-dev/loam/kubetest"
)

// restarter restarts the cluster's API server when a step's fault says
// so: in a goroutine of its own, since the fault comes in the proxy's
// handler of the operator's write, which must return for the write to
// land. The replay whose step began it owns the goroutine, and waits for
// it before it ends. One restarter serves every replay of an explorer,
// so that each knows when the last restart was.
type restarter struct {
	cluster *kubetest.Cluster
	mu      sync.Mutex
	// begun counts the restarts begun, and took is how long those
	// finished took; done is closed when the last one has finished, nil
	// before the first; err is what failed.
	begun int
	took  time.Duration
	done  chan struct{}
	err   error
	// ended is when the last restart finished.
	ended time.Time
}

// afterRestart is how long after a restart the cluster's clients may
// still be catching up: a client-go informer waits up to 30 s before it
// watches again after its watch failed (its reflector's backoff, which
// grows to that when failures come often, as they do when the API
// server restarts again and again), and the garbage collector may have
// dropped a custom resource from what it monitors while discovery
// didn't serve it, and takes it back at its next resync of discovery,
// every 30 s. With 30 s alone, a run of the Memcached example found a
// Deployment left behind 20 s after its owner's delete, well within a
// minute of a restart; with 60 s, another found a PodDisruptionBudget
// still to be collected; and, once, a throwaway test saw the collector
// take about a minute to delete a dependent whose owner was deleted
// right after a second quick restart.
const afterRestart = 2 * time.Minute

// begin begins a restart, unless one is under way.
func (s *restarter) begin(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.underWayLocked() {
		return
	}
	s.begun++
	done := make(chan struct{})
	s.done = done
	go func() {
		defer close(done)
		start := time.Now()
		// Not cancelled with the test: a restart cut short would leave
		// the cluster without an API server for every later replay.
		err := s.cluster.Restart(context.WithoutCancel(ctx))
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ended = time.Now()
		s.took += s.ended.Sub(start)
		s.err = errors.Join(s.err, err)
	}()
}

// count returns how many restarts have begun.
func (s *restarter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.begun
}

// deadline returns when a wait that began at start, and may take
// settle, is over: settle after start, or, when the last restart, of
// this replay or an earlier one, may have left the cluster's clients
// catching up until later, settle after they are back, which may be
// afterRestart after the restart. Without it, a controller's informers,
// or the garbage collector, catching up after a restart would be taken
// for an operator that doesn't settle.
func (s *restarter) deadline(start time.Time, settle time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := start.Add(settle)
	if back := s.ended.Add(afterRestart + settle); back.After(deadline) {
		return back
	}
	return deadline
}

// during reports whether a restart was under way at some time since t:
// one is now, or the last ended after t.
func (s *restarter) during(t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.underWayLocked() || s.ended.After(t)
}

// underWayLocked reports whether a restart is under way. s.mu is held.
func (s *restarter) underWayLocked() bool {
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// spent returns how long the restarts that have finished took.
func (s *restarter) spent() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.took
}

// wait waits until no restart is under way, and returns what failed in
// any, or ctx's cause when ctx ends first.
func (s *restarter) wait(ctx context.Context) error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return fmt.Errorf("restarting the API server: %w", s.err)
	}
	return nil
}
