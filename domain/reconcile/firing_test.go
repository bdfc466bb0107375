package reconcile_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// handClock is a Clock whose timers fire only when the test fires them.
type handClock struct {
	mu     sync.Mutex
	timers []func()
}

func (*handClock) Now() time.Time { return time.Time{} }

func (c *handClock) AfterFunc(_ time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timers = append(c.timers, f)
	return func() bool { return false }
}

// fire runs the last timer set, in the caller's goroutine, as the clock's
// own goroutine would.
func (c *handClock) fire() {
	c.mu.Lock()
	f := c.timers[len(c.timers)-1]
	c.mu.Unlock()
	f()
}

// setQueue is a work queue that, like client-go's, holds a key once and
// queues a key added while it is processed again at its Done. Get reports
// shutdown when no key waits, so a worker's loop of Next ends when the
// queue is empty. onRequeue, when set, runs as a requeue's add begins.
type setQueue struct {
	onRequeue func()

	mu                       sync.Mutex
	waiting                  []ports.Key
	queued, processing, more map[ports.Key]bool
}

func newSetQueue() *setQueue {
	return &setQueue{queued: map[ports.Key]bool{}, processing: map[ports.Key]bool{}, more: map[ports.Key]bool{}}
}

func (q *setQueue) Add(key ports.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *setQueue) AddRequeue(key ports.Key) {
	if q.onRequeue != nil {
		q.onRequeue()
	}
	q.Add(key)
}

func (q *setQueue) AddBackground(key ports.Key) { q.Add(key) }

func (q *setQueue) addLocked(key ports.Key) {
	switch {
	case q.processing[key]:
		q.more[key] = true
	case !q.queued[key]:
		q.queued[key] = true
		q.waiting = append(q.waiting, key)
	}
}

func (q *setQueue) Get() (ports.Key, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		return ports.Key{}, true
	}
	key := q.waiting[0]
	q.waiting = q.waiting[1:]
	delete(q.queued, key)
	q.processing[key] = true
	return key, false
}

func (q *setQueue) Done(key ports.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.more[key] {
		delete(q.more, key)
		q.addLocked(key)
	}
}

func (*setQueue) ShutDown() {}

// countingHandler counts its passes; the first returns an After.
type countingHandler struct{ passes atomic.Int32 }

func (h *countingHandler) Reconcile(context.Context, ports.Object) (ports.Result, error) {
	if h.passes.Add(1) == 1 {
		return ports.Result{After: time.Minute}, nil
	}
	return ports.Result{}, nil
}

func (*countingHandler) Finalize(context.Context, ports.Object) error { return nil }

// A change that lands while the key's timer fires is reconciled once: the
// timer queues its key before a change can drop it, so the change either
// drops the timer first, or finds its key queued and joins it. Were the
// key queued after the timer let go, a change landing in between would be
// reconciled at once, and the old timer's add would reconcile it again.
//
// The timer is paused in its add until the change has been notified and
// reconciled, or, when the change can't land before the timer is done, for
// a tenth of a second; the count of passes, not the pause, is what the
// test asserts.
func TestLoop_a_change_landing_while_a_timer_fires_is_reconciled_once(t *testing.T) {
	clock := &handClock{}
	q := newSetQueue()
	h := &countingHandler{}
	l, err := reconcile.New(reconcile.Config{
		Source: fakeSource{obj: ports.Object{UID: "uid-1"}}, Writer: &fakeWriter{}, Queue: q,
		Handler: h, Recorder: fakeRecorder{}, Clock: clock,
	})
	require.NoError(t, err)
	l.Reconcile(t.Context(), key) // sets the After's timer
	require.Equal(t, 1, l.Pending())

	changed := make(chan struct{})
	q.onRequeue = func() {
		q.onRequeue = nil
		go func() {
			defer close(changed)
			l.Notify(change)
			for l.Next(context.Background()) {
			}
		}()
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
	clock.fire()
	<-changed
	for l.Next(context.Background()) {
	}

	require.Equal(t, int32(2), h.passes.Load(), "the After's pass and one pass for the change and the timer")
	require.Zero(t, l.Pending())
}
