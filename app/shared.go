package app

import (
	"slices"
	"sync"
)

// sharedValues holds what Share kept, in order.
type sharedValues struct {
	mu     sync.Mutex
	values []any
}

// Share keeps v on the Setup for the other parts Init builds on it to
// find with Shared, whichever is built first: such as kube's Webhooks,
// which every Controller of the App waits for and knows the errors of.
// A nil v is kept as no value.
func (s *Setup) Share(v any) {
	if v == nil {
		return
	}
	if s.shared == nil {
		s.shared = &sharedValues{}
	}
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	s.shared.values = append(s.shared.values, v)
}

// Shared returns every value Share kept on s so far, in the order it
// kept them; none on a Setup that kept none.
func (s *Setup) Shared() []any {
	if s == nil || s.shared == nil {
		return nil
	}
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	return slices.Clone(s.shared.values)
}
