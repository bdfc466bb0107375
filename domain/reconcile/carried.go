package reconcile

import (
	"sync"

	"github.com/loam-dev/loam/ports"
)

// carried is the set of keys whose latest pass failed or timed out with
// something Prepare carried into it still applying, such as a failure
// scenario: the keys Lift queues again at once.
type carried struct {
	mu      sync.Mutex
	keys    map[ports.Key]struct{}
	stopped bool
}

func newCarried() *carried { return &carried{keys: map[ports.Key]struct{}{}} }

// set adds key to the set when in, and removes it otherwise.
func (c *carried) set(key ports.Key, in bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case in && !c.stopped:
		c.keys[key] = struct{}{}
	default:
		delete(c.keys, key)
	}
}

// take empties the set, and returns what it held.
func (c *carried) take() []ports.Key {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]ports.Key, 0, len(c.keys))
	for key := range c.keys {
		keys = append(keys, key)
	}
	clear(c.keys)
	return keys
}

// stop empties the set, and keeps it empty from then on.
func (c *carried) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	clear(c.keys)
}
