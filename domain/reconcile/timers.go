package reconcile

import (
	"sync"
	"time"

	"github.com/loam-dev/loam/ports"
)

// timers holds at most one pending timer per key: the latest pass's retry
// or After. Setting one replaces the key's last, dropping one cancels it,
// and a timer that fires queues its key only if it is still the key's
// latest, so a timer that lost the race with its replacement or with a
// change does nothing. A firing timer queues its key with the lock held,
// so its end and its add are one step to a drop: a change's Notify either
// drops the timer before it fires, or finds it gone and its key already
// queued, where the change's own add joins it. Queued after the unlock, a
// change landing in between would be reconciled, and then the old
// timer's add would reconcile the key once more for nothing. fire must
// therefore never call back into the timers. client-go's AddAfter can't
// be cancelled, which is why the Loop keeps its delays here rather than
// in the work queue.
type timers struct {
	clock ports.Clock
	fire  func(ports.Key)

	mu      sync.Mutex
	pending map[ports.Key]timer
	// next numbers the timers, so a firing one knows whether it is still
	// its key's latest.
	next    uint64
	stopped bool
}

type timer struct {
	id   uint64
	stop func() bool
}

func newTimers(clock ports.Clock, fire func(ports.Key)) *timers {
	return &timers{clock: clock, fire: fire, pending: map[ports.Key]timer{}}
}

// set replaces key's pending timer, if any, with one that queues key once d
// has passed. It does nothing once the timers have stopped.
func (t *timers) set(key ports.Key, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(key)
	if t.stopped {
		return
	}
	t.next++
	id := t.next
	stop := t.clock.AfterFunc(d, func() { t.fired(key, id) })
	t.pending[key] = timer{id: id, stop: stop}
}

// fired is the end of the timer id of key: it queues key if that timer is
// still the key's latest, before it lets a drop in.
func (t *timers) fired(key ports.Key, id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.pending[key]; !ok || cur.id != id || t.stopped {
		return
	}
	delete(t.pending, key)
	t.fire(key)
}

// drop cancels key's pending timer, if any.
func (t *timers) drop(key ports.Key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(key)
}

func (t *timers) dropLocked(key ports.Key) {
	if cur, ok := t.pending[key]; ok {
		cur.stop()
		delete(t.pending, key)
	}
}

// len returns how many keys have a timer pending.
func (t *timers) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// stop cancels every pending timer, and every one set from then on.
func (t *timers) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for key := range t.pending {
		t.dropLocked(key)
	}
}
