// Package queue builds a controller's work queue: client-go's work queue
// of ports.Key, which holds each key once, never hands one key to two
// workers at once and records its metrics, with an order of loam's own
// plugged into it. A key waits in one of three classes, by why it was
// added:
//
//   - changes (Add): an object changed, or one it owns or relates to;
//   - requeues (AddRequeue): a retry or an After whose timer fired, a key
//     the controller itself asked to see again at that time;
//   - the background (AddBackground): an informer's first list and the
//     resync, keys no change and no pass asked for.
//
// Within a class keys go out first in, first out; a requeue, queued when
// its timer fires, so goes out in the order of the due times. Across the
// classes, Pop hands out:
//
//  1. a change, unless ChangesPerBackground changes went out in a row
//     while a requeue or a background key waited;
//  2. otherwise a requeue, unless RequeuesPerBackground requeues went out
//     while a background key waited (changes between them don't break
//     that run);
//  3. otherwise a background key.
//
// So a retry or an After never waits behind a new leader's whole initial
// list or a resync — only behind the changes and the requeues that came
// due before it — and every class keeps draining: however many changes
// wait, the requeues and the background together get one hand-out in
// ChangesPerBackground+1, and of those the background gets at least one
// in RequeuesPerBackground+1.
//
// A key is held once: adding a waiting key at a higher class moves it to
// the end of that class, and adding it at a lower one leaves it where it
// is. The retries' and Afters' delays are the domain's own timers, which a
// change can cancel, so the queue delays nothing.
package queue

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/loam-dev/loam/ports"
)

// ChangesPerBackground is how many changes in a row the queue hands out
// while a requeue or a background key waits, before it hands one of those
// out. The keys behind the changes — retries, Afters, a new leader's
// initial list, the resync — so keep at least a tenth of the workers'
// throughput however busy the changes are, and a change waits behind at
// most one of them per nine changes ahead of it: it loses at most a tenth
// of the throughput it would have with strict priority. Fewer
// (alternating, at 1) would give half of a busy controller's throughput
// to keys no change asked for; many more would let a stream of changes
// hold a failed key's retry, and a resync, for that many reconciles.
const ChangesPerBackground = 9

// RequeuesPerBackground is how many requeues the queue hands out while a
// background key waits, before it hands that key out, for the same
// reason: a controller whose keys keep coming due (short Afters, a
// failing dependency's retries) still works through its initial list and
// its resync.
const RequeuesPerBackground = 9

// Config is what New builds a queue from.
type Config struct {
	// Name names the queue, as the metrics its MetricsProvider makes are
	// labelled.
	Name string
	// Metrics makes the queue's metrics. Nil records none: the queue is
	// then left unnamed, which is how client-go's queue records nothing,
	// rather than falling back to client-go's process-wide provider.
	Metrics workqueue.MetricsProvider
	// Clock times the queue's metrics. Nil is the real clock.
	Clock clock.WithTicker
	// Keys, when not nil, records the queue's depth, its adds and each
	// key's wait itself, key by key, with the shard that Shard says the
	// key's object is in, in place of the records Metrics makes of them,
	// which client-go makes without the key. Metrics still records the
	// rest. A sharded controller's queue has them.
	Keys Keys
	// Shard returns the shard of the object of a key, and false when it
	// has none the queue can know, such as an object gone from the cache.
	// It is called with the queue's lock held, and must be quick.
	Shard func(ports.Key) (int, bool)
}

// Keys records the instruments of a queue's keys, each with its shard:
// shard is the key's, when ok.
type Keys interface {
	// Queued records that a key began to wait: one more waits, and one
	// more was added.
	Queued(shard int, ok bool)
	// Taken records that a key was handed to a worker after waiting
	// waited: one fewer waits.
	Taken(shard int, ok bool, waited time.Duration)
}

// Queue is a controller's work queue: a ports.Queue, and a client-go
// TypedInterface whose Add queues a change.
type Queue struct {
	q     workqueue.TypedInterface[ports.Key]
	order *order
}

var (
	_ ports.Queue                         = (*Queue)(nil)
	_ workqueue.TypedInterface[ports.Key] = (*Queue)(nil)
)

// New returns a running queue. With Metrics, client-go runs a goroutine
// that updates them until ShutDown, which its owner must call.
func New(c Config) *Queue {
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	name := c.Name
	if c.Metrics == nil {
		// client-go falls back to its global provider for a named queue
		// that has none: an unnamed queue records nothing instead.
		name = ""
	}
	o := newOrder()
	metrics := c.Metrics
	if c.Keys != nil {
		o.keys, o.shard, o.clock = c.Keys, c.Shard, clk
		if metrics != nil {
			metrics = keyless{metrics}
		}
	}
	return &Queue{
		q: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[ports.Key]{
			Name:            name,
			MetricsProvider: metrics,
			Clock:           clk,
			Queue:           o,
		}),
		order: o,
	}
}

// Add queues key as a change, ahead of the requeues and the background;
// a key that waits as either moves to the end of the changes.
func (q *Queue) Add(key ports.Key) { q.add(key, change) }

// AddRequeue queues key as a requeue, a retry or an After that came due:
// behind the changes, ahead of the background. A key that waits in the
// background moves to the end of the requeues; one that waits as a change
// or a requeue keeps its place.
func (q *Queue) AddRequeue(key ports.Key) { q.add(key, requeue) }

// AddBackground queues key behind the changes and the requeues; a key
// that waits as either keeps its place.
func (q *Queue) AddBackground(key ports.Key) { q.add(key, background) }

// add tells the order the priority key is wanted at, and then adds it to
// client-go's queue, which calls the order's Push or Touch when the key
// is not being processed, and its Push at Done when it is: either takes
// the priority. client-go's Queue interface carries no priority, which is
// why it goes beside the call rather than with it.
func (q *Queue) add(key ports.Key, p priority) {
	if !q.order.want(key, p) {
		return
	}
	q.q.Add(key)
}

// Get blocks until a key is ready, and returns it; shutdown is true once
// the queue is shut down and holds no key.
func (q *Queue) Get() (key ports.Key, shutdown bool) { return q.q.Get() }

// Done marks key as processed: a key added meanwhile is queued again, at
// the higher priority of those adds.
func (q *Queue) Done(key ports.Key) { q.q.Done(key) }

// Len returns how many keys wait, of every class.
func (q *Queue) Len() int { return q.q.Len() }

// ShutDown drops every add from now on and makes Get return shutdown once
// the queue holds no key, without waiting for the keys being processed.
func (q *Queue) ShutDown() {
	q.order.close()
	q.q.ShutDown()
}

// ShutDownWithDrain is ShutDown, but waits until every key handed out is
// Done.
func (q *Queue) ShutDownWithDrain() {
	q.order.close()
	q.q.ShutDownWithDrain()
}

// ShuttingDown reports whether the queue has been shut down.
func (q *Queue) ShuttingDown() bool { return q.q.ShuttingDown() }

// priority is a key's class: the background's, a requeue's or a
// change's, from the lowest.
type priority uint8

const (
	background priority = iota
	requeue
	change
	classes
)

// order is client-go's workqueue.Queue[ports.Key]: the keys that wait, in
// the order they are handed out. client-go calls Push, Touch, Len and Pop
// under its own lock, one at a time; Queue.add calls want outside it,
// which is why order has a lock of its own, always taken last.
//
// A key waits in the list of its class, in the order it came. A key
// promoted to a higher class is appended to that class's list and its
// entry in the lower one left there, stale: Pop skips an entry whose
// sequence number is no longer its key's, so a promotion costs no search.
type order struct {
	mu sync.Mutex
	// wanted is the highest priority each key was added at since an add
	// of it last reached Push or Touch. An add that finds the key being
	// processed reaches neither until the Done, so its priority waits
	// here until then.
	wanted map[ports.Key]priority
	// waiting is each waiting key's entry: its priority and sequence
	// number.
	waiting map[ports.Key]entry
	// lists holds the waiting keys of each class, by priority.
	lists [classes]list
	seq   uint64
	// changesRun is how many changes in a row Pop has handed out while a
	// requeue or a background key waited; requeuesRun how many requeues
	// it has handed out while a background key waited.
	changesRun, requeuesRun int
	closed                  bool
	// keys, when not nil, records each key's wait, with the shard shard
	// says it is in, read by clock.
	keys  Keys
	shard func(ports.Key) (int, bool)
	clock clock.PassiveClock
}

type entry struct {
	key ports.Key
	at  priority
	seq uint64
	// since is when the key began to wait, and shard, when sharded, the
	// shard it was recorded in, for keys.
	since   time.Time
	shard   int
	sharded bool
}

func newOrder() *order {
	return &order{wanted: map[ports.Key]priority{}, waiting: map[ports.Key]entry{}}
}

// want records that key is wanted at p, and reports whether the queue
// still takes adds.
func (o *order) want(key ports.Key, p priority) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	if cur, ok := o.wanted[key]; !ok || p > cur {
		o.wanted[key] = p
	}
	return true
}

// close stops want taking adds, so no priority is kept for an add the
// shut-down queue drops. The priorities kept already stay: client-go
// still queues a key added before the shutdown while it was processed.
func (o *order) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
}

// take returns the priority key is wanted at, and forgets it. An add that
// another add's Push or Touch already answered — it found the key
// waiting, or it was handed out since — left none: the key is then
// wanted in the background, since a pass that began after the add was
// made handles it.
func (o *order) take(key ports.Key) priority {
	p := o.wanted[key]
	delete(o.wanted, key)
	return p
}

// Push queues a key that isn't waiting, at the priority it is wanted at.
func (o *order) Push(key ports.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := entry{key: key}
	if o.keys != nil {
		e.since = o.clock.Now()
		if o.shard != nil {
			e.shard, e.sharded = o.shard(key)
		}
		o.keys.Queued(e.shard, e.sharded)
	}
	o.queue(e, o.take(key))
}

// queue makes e, which is what it records of its key, wait at p.
func (o *order) queue(e entry, p priority) {
	o.seq++
	e.at, e.seq = p, o.seq
	o.waiting[e.key] = e
	o.lists[p].push(e)
}

// Touch is an add of a waiting key: one wanted at a higher class moves to
// the end of that class.
func (o *order) Touch(key ports.Key) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.take(key)
	if e, ok := o.waiting[key]; ok && p > e.at {
		o.lists[e.at].drop()
		o.queue(e, p)
	}
}

// Len returns how many keys wait.
func (o *order) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lists[change].n + o.lists[requeue].n + o.lists[background].n
}

// Pop hands out the first key of the class the package's order picks.
// client-go calls it only when Len is positive.
func (o *order) Pop() ports.Key {
	o.mu.Lock()
	defer o.mu.Unlock()
	from := &o.lists[o.pick()]
	for {
		e := from.pop()
		if cur, ok := o.waiting[e.key]; ok && cur.seq == e.seq {
			delete(o.waiting, e.key)
			from.drop()
			if o.keys != nil {
				o.keys.Taken(cur.shard, cur.sharded, o.clock.Since(cur.since))
			}
			return e.key
		}
		// An entry whose key has since been promoted.
	}
}

// pick returns the class Pop hands a key out of: a change, unless
// ChangesPerBackground went out in a row while a lower class waited; else
// a requeue, unless RequeuesPerBackground went out while a background key
// waited; else a background key. A run counts only while a lower class
// waits, so keys handed out with nothing behind them don't shorten it.
func (o *order) pick() priority {
	changes, requeues, behind := o.lists[change].n, o.lists[requeue].n, o.lists[background].n
	if changes > 0 {
		switch {
		case requeues+behind == 0:
			o.changesRun = 0
			return change
		case o.changesRun < ChangesPerBackground:
			o.changesRun++
			return change
		}
	}
	o.changesRun = 0
	if requeues > 0 {
		switch {
		case behind == 0:
			o.requeuesRun = 0
			return requeue
		case o.requeuesRun < RequeuesPerBackground:
			o.requeuesRun++
			return requeue
		}
	}
	o.requeuesRun = 0
	return background
}

// list is a FIFO of entries, stale ones included; n counts the live ones.
type list struct {
	entries []entry
	n       int
}

func (l *list) push(e entry) {
	l.entries = append(l.entries, e)
	l.n++
}

// drop counts one entry stale, and lets go of every entry once none is
// live, so that keys promoted out of a class that is not handed out from
// leave no trail.
func (l *list) drop() {
	l.n--
	if l.n == 0 {
		l.entries = nil
	}
}

// pop removes the first entry, live or stale, and returns it.
func (l *list) pop() entry {
	e := l.entries[0]
	// The array would otherwise keep it until append moves on.
	l.entries[0] = entry{}
	l.entries = l.entries[1:]
	return e
}

// keyless is a MetricsProvider whose depth, adds and latency record
// nothing, for a queue whose Keys record them.
type keyless struct{ workqueue.MetricsProvider }

func (keyless) NewDepthMetric(string) workqueue.GaugeMetric       { return none{} }
func (keyless) NewAddsMetric(string) workqueue.CounterMetric      { return none{} }
func (keyless) NewLatencyMetric(string) workqueue.HistogramMetric { return none{} }

// none records nothing.
type none struct{}

func (none) Inc()            {}
func (none) Dec()            {}
func (none) Observe(float64) {}
