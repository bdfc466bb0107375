package fault

import "container/list"

// countCache holds, for the scenarios an Injector met most recently, how
// many faults each of their rules has injected. It forgets the scenario it
// met least recently once it holds max. Its user holds the lock.
type countCache struct {
	max     int
	order   *list.List // of *countEntry, most recently used first
	entries map[string]*list.Element
}

type countEntry struct {
	key    string
	counts []int
}

func newCountCache(maxScenarios int) *countCache {
	return &countCache{
		max:     maxScenarios,
		order:   list.New(),
		entries: make(map[string]*list.Element),
	}
}

// get returns the counts of the scenario key, one per rule of its rules,
// starting them at zero for a scenario it doesn't hold.
func (c *countCache) get(key string, rules int) []int {
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		entry := e.Value.(*countEntry)
		if len(entry.counts) != rules {
			entry.counts = make([]int, rules)
		}
		return entry.counts
	}
	if c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*countEntry).key)
	}
	entry := &countEntry{key: key, counts: make([]int, rules)}
	c.entries[key] = c.order.PushFront(entry)
	return entry.counts
}

// len returns how many scenarios c holds counts of.
func (c *countCache) len() int { return c.order.Len() }
