package app

import (
	"context"
	"sync"
)

// stopHooks holds the functions OnStop registered, to run last registered
// first once the Services have stopped.
type stopHooks struct {
	mu    sync.Mutex
	hooks []func(context.Context) error
}

// OnStop registers f to run after every Service has stopped, inside the
// grace period, last registered first. f's error is logged and makes the
// App exit 1.
func (s *Setup) OnStop(f func(ctx context.Context) error) {
	if s.onStop == nil {
		s.onStop = &stopHooks{}
	}
	s.onStop.mu.Lock()
	defer s.onStop.mu.Unlock()
	s.onStop.hooks = append(s.onStop.hooks, f)
}

// registered returns the hooks registered so far, in the order they were.
func (h *stopHooks) registered() []func(context.Context) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]func(context.Context) error(nil), h.hooks...)
}
