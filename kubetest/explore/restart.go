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
// land. The replay that made it owns the goroutine, and waits for it
// before it ends.
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
}

// begin begins a restart, unless one is under way.
func (s *restarter) begin(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		select {
		case <-s.done:
		default:
			return
		}
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
		s.took += time.Since(start)
		s.err = errors.Join(s.err, err)
	}()
}

// count returns how many restarts have begun.
func (s *restarter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.begun
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
