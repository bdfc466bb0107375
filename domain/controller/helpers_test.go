package controller_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

// The rig below runs a Controller on the ports' mocks and a few fakes
// with behaviour of their own — an elector the test grants and takes the
// Lease of, a work queue with client-go's semantics, and a Handler whose
// reconciles the test holds — inside synctest bubbles. A journal records
// what happened in what order across all of them.

// journal is the order things happened in, across the rig's ports.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(line string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, line)
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.lines)
}

// index returns where line first is in the journal, failing the test when
// it isn't.
func (j *journal) index(t *testing.T, line string) int {
	t.Helper()
	i := slices.Index(j.all(), line)
	require.NotEqual(t, -1, i, "%q is not in the journal %q", line, j.all())
	return i
}

// before fails the test unless a happened before b.
func (j *journal) before(t *testing.T, a, b string) {
	t.Helper()
	require.Less(t, j.index(t, a), j.index(t, b), "%q before %q in %q", a, b, j.all())
}

// elector is a ports.Elector the test grants and takes the Lease of,
// keeping the port's promise: it releases the Lease only after the
// leader's function returned.
type elector struct {
	j           *journal
	grant, take chan struct{}
}

func (e *elector) Run(ctx context.Context, onStarted func(context.Context), onStopped func()) {
	defer onStopped()
	e.j.add("campaign")
	select {
	case <-e.grant:
	case <-ctx.Done():
		return
	}
	e.j.add("lead")
	leading, cancel := context.WithCancel(ctx)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		onStarted(leading)
	}()
	select {
	case <-ctx.Done():
		// client-go's renew loop ends with the elector's context.
		e.j.add("stop renewing")
	case <-e.take:
		e.j.add("lost")
	}
	cancel()
	<-returned
	if ctx.Err() != nil {
		e.j.add("release")
	}
}

// queue is a work queue with client-go's semantics: each key once, never
// to two workers at once, handed out again once Done when added while
// processed, and a shutdown that leaves the backlog. It has one priority:
// the order of changes and background keys is adapters/queue's, tested
// there.
type queue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	waiting    []ports.Key
	processing map[ports.Key]bool
	dirty      map[ports.Key]bool
	shutdown   bool
}

func newQueue() *queue {
	q := &queue{processing: map[ports.Key]bool{}, dirty: map[ports.Key]bool{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) Add(key ports.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown || q.dirty[key] {
		return
	}
	q.dirty[key] = true
	if !q.processing[key] {
		q.waiting = append(q.waiting, key)
		q.cond.Signal()
	}
}

func (q *queue) AddRequeue(key ports.Key)    { q.Add(key) }
func (q *queue) AddBackground(key ports.Key) { q.Add(key) }

func (q *queue) Get() (ports.Key, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.waiting) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if len(q.waiting) == 0 {
		return ports.Key{}, true
	}
	key := q.waiting[0]
	q.waiting = q.waiting[1:]
	q.processing[key] = true
	delete(q.dirty, key)
	return key, false
}

func (q *queue) Done(key ports.Key) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.dirty[key] {
		q.waiting = append(q.waiting, key)
		q.cond.Signal()
	}
}

func (q *queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	q.cond.Broadcast()
}

// handler runs each reconcile as its object's name says: "hold…" blocks
// until release is closed or its context ends, "panic" panics, "after"
// asks to be reconciled again in 6s, and anything else succeeds at once.
type handler struct {
	j       *journal
	release chan struct{}
	freed   sync.Once

	mu       sync.Mutex
	calls    map[string][]time.Duration
	start    time.Time
	inFlight int
	most     int
	// causes is the cause of each held reconcile's context ending, nil
	// for one released with its context alive.
	causes []error
}

func (h *handler) Reconcile(ctx context.Context, obj ports.Object) (ports.Result, error) {
	name := string(obj.UID)
	h.mu.Lock()
	h.calls[name] = append(h.calls[name], time.Since(h.start))
	h.inFlight++
	h.most = max(h.most, h.inFlight)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}()
	h.j.add("reconcile " + name)
	switch {
	case strings.HasPrefix(name, "hold"):
		select {
		case <-h.release:
			h.record(nil)
		case <-ctx.Done():
			h.record(context.Cause(ctx))
		}
		h.j.add("reconciled " + name)
	case name == "panic":
		panic("a bug in the end user's code")
	case name == "after":
		return ports.Result{After: 6 * time.Second}, nil
	}
	return ports.Result{}, nil
}

// free releases the held reconciles, once however often it is called, so
// a test that fails with reconciles held still ends.
func (h *handler) free() { h.freed.Do(func() { close(h.release) }) }

func (h *handler) record(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.causes = append(h.causes, cause)
}

func (*handler) Finalize(context.Context, ports.Object) error { return nil }

// of returns when each reconcile of name started, since the rig began.
func (h *handler) of(name string) []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls[name])
}

func (h *handler) maxInFlight() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.most
}

func (h *handler) heldCauses() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.causes)
}

// bubbleClock is package time, which a synctest bubble fakes.
type bubbleClock struct{}

func (bubbleClock) Now() time.Time { return time.Now() }

func (bubbleClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// rig is a Controller on the mocks and fakes.
type rig struct {
	ctrl    *controller.Controller
	j       *journal
	watch   *portsmock.MockWatch
	ready   *portsmock.MockReadiness
	rec     *portsmock.MockRecorder
	elector *elector
	handler *handler
	queues  int

	// notify is what the Controller handed the Watch's Start.
	mu     sync.Mutex
	notify func(ports.Event)
	// synced is closed to let the Watch's caches sync.
	synced chan struct{}
	served chan error
}

// fenced are Lease timings that fence leadership.
var fenced = controller.Lease{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// newRig returns a rig whose Controller has workers workers, its Config
// changed by each of with. Its Watch passes its Check and is expected to
// start and stop once; the test sets the rest of what it expects of the
// mocks.
func newRig(t *testing.T, workers int, with ...func(*controller.Config)) *rig {
	t.Helper()
	mc := gomock.NewController(t)
	r := &rig{
		j:      &journal{},
		watch:  portsmock.NewMockWatch(mc),
		ready:  portsmock.NewMockReadiness(mc),
		rec:    portsmock.NewMockRecorder(mc),
		synced: make(chan struct{}),
		served: make(chan error, 1),
	}
	r.elector = &elector{j: r.j, grant: make(chan struct{}), take: make(chan struct{})}
	r.handler = &handler{j: r.j, release: make(chan struct{}), calls: map[string][]time.Duration{}, start: time.Now()}
	r.rec.EXPECT().ReconcileStarted(gomock.Any(), gomock.Any()).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx }).AnyTimes()
	r.rec.EXPECT().ReconcileEnded(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes()
	r.watch.EXPECT().Get(gomock.Any()).DoAndReturn(func(key ports.Key) (ports.Object, bool, error) {
		// Each object's uid is its name, which the handler reads.
		return ports.Object{UID: types.UID(key.Name)}, true, nil
	}).AnyTimes()
	r.ready.EXPECT().MarkHealthy().Do(func() { r.j.add("healthy") }).AnyTimes()
	r.ready.EXPECT().MarkUnhealthy().Do(func() { r.j.add("unhealthy") }).AnyTimes()

	c := controller.Config{
		Name:    "memcached-controller",
		Workers: workers,
		Watch:   r.watch,
		NewQueue: func() ports.Queue {
			r.mu.Lock()
			r.queues++
			r.mu.Unlock()
			return newQueue()
		},
		Elector:  r.elector,
		Writer:   portsmock.NewMockWriter(mc),
		Handler:  r.handler,
		Recorder: r.rec,
		Clock:    bubbleClock{},
		Ready:    r.ready,
		Lease:    fenced,

		ReconcileTimeout: rigTimeout,
	}
	for _, f := range with {
		f(&c)
	}
	ctrl, err := controller.New(c)
	require.NoError(t, err)
	r.ctrl = ctrl
	return r
}

// watching expects the Watch to check, start, sync once synced is closed,
// and stop, once each.
func (r *rig) watching() {
	r.watch.EXPECT().Check(gomock.Any()).DoAndReturn(func(context.Context) error { r.j.add("check"); return nil })
	r.watch.EXPECT().Start(gomock.Any(), gomock.Any()).Do(func(_ context.Context, notify func(ports.Event)) {
		r.mu.Lock()
		r.notify = notify
		r.mu.Unlock()
		r.j.add("start")
	})
	r.watch.EXPECT().WaitForSync(gomock.Any()).DoAndReturn(func(ctx context.Context) bool {
		select {
		case <-r.synced:
			return true
		case <-ctx.Done():
			return false
		}
	})
	r.watch.EXPECT().Stop().Do(func() { r.j.add("stop watching") })
}

// unstarted expects the Watch to stop once without starting: Serve
// returns before it starts the Watch, whose Stop withdraws what it
// claimed of its Client's shared stores.
func (r *rig) unstarted() { r.watch.EXPECT().Stop() }

// serve runs Serve in the background until ctx ends.
func (r *rig) serve(ctx context.Context) {
	go func() { r.served <- r.ctrl.Serve(ctx) }()
}

// lead serves until ctx ends, with the Watch checked, started and synced,
// and the Lease granted, and returns once every worker waits for a key.
func (r *rig) lead(ctx context.Context) {
	r.watching()
	r.serve(ctx)
	close(r.synced)
	close(r.elector.grant)
	synctest.Wait()
}

// change tells the Controller, as the Watch would, that the objects named
// names changed.
func (r *rig) change(names ...string) {
	r.mu.Lock()
	notify := r.notify
	r.mu.Unlock()
	for _, n := range names {
		notify(ports.Event{Key: ports.Key{Namespace: "ns", Name: n}})
	}
}
