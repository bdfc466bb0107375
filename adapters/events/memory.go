package events

import (
	"context"
	"slices"
	"sync"

	"github.com/loam-dev/loam/ports"
)

// Memory is a ports.Events that keeps what it is handed, in the order it
// was, for a unit test to read: it writes nothing anywhere. It is safe
// for concurrent use.
type Memory struct {
	mu      sync.Mutex
	records []Recorded
}

// Recorded is one Event a Memory was handed.
type Recorded struct {
	// Object is the object the Event is about.
	Object ports.Object
	// Record is the Event.
	Record ports.EventRecord
}

var _ ports.Events = (*Memory)(nil)

// Record keeps r about obj.
func (m *Memory) Record(_ context.Context, obj ports.Object, r ports.EventRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, Recorded{Object: obj, Record: r})
}

// Recorded returns a copy of what Record kept, the oldest first.
func (m *Memory) Recorded() []Recorded {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.records)
}
