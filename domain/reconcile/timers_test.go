package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// The tests in this file run a Loop's timers on package time inside
// synctest bubbles, and read when the work queue was handed the key.

// bubbleClock is package time, which a synctest bubble fakes.
type bubbleClock struct{}

func (bubbleClock) Now() time.Time { return time.Now() }

func (bubbleClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// addsQueue records when each add came, as time since the test began,
// and at which priority.
type addsQueue struct {
	start time.Time

	mu   sync.Mutex
	adds []queued
}

// queued is an add: when it came, and in which class: "change",
// "requeue" or "background".
type queued struct {
	at    time.Duration
	class string
}

// changed, requeued and behind are the adds of a change, of a requeue and
// of the background at d.
func changed(d time.Duration) queued  { return queued{at: d, class: "change"} }
func requeued(d time.Duration) queued { return queued{at: d, class: "requeue"} }
func behind(d time.Duration) queued   { return queued{at: d, class: "background"} }

func (q *addsQueue) Add(ports.Key) { q.add("change") }

func (q *addsQueue) AddRequeue(ports.Key) { q.add("requeue") }

func (q *addsQueue) AddBackground(ports.Key) { q.add("background") }

func (q *addsQueue) add(class string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.adds = append(q.adds, queued{at: time.Since(q.start), class: class})
}

func (q *addsQueue) added() []queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]queued(nil), q.adds...)
}

func (*addsQueue) Get() (ports.Key, bool) { return ports.Key{}, true }
func (*addsQueue) Done(ports.Key)         {}
func (*addsQueue) ShutDown()              {}

// scripted is a Handler whose passes end as outcomes says, one per pass,
// in order.
type scripted struct {
	outcomes []func() (ports.Result, error)
	passes   int
}

func (h *scripted) Reconcile(context.Context, ports.Object) (ports.Result, error) {
	o := h.outcomes[h.passes]
	h.passes++
	return o()
}

func (*scripted) Finalize(context.Context, ports.Object) error { return nil }

func after(d time.Duration) func() (ports.Result, error) {
	return func() (ports.Result, error) { return ports.Result{After: d}, nil }
}

func fails() (ports.Result, error) { return ports.Result{}, errBoom }

func panics() (ports.Result, error) { panicking("boom"); return ports.Result{}, nil }

// timed is a Loop over one cached object, whose passes end as outcomes
// say, retrying after 1s, 2s, 4s….
func timed(t *testing.T, outcomes ...func() (ports.Result, error)) (*reconcile.Loop, *addsQueue) {
	t.Helper()
	q := &addsQueue{start: time.Now()}
	l, err := reconcile.New(reconcile.Config{
		Source:   fakeSource{obj: ports.Object{UID: "uid-1"}},
		Writer:   &fakeWriter{},
		Queue:    q,
		Handler:  &scripted{outcomes: outcomes},
		Recorder: fakeRecorder{},
		Clock:    bubbleClock{},
		Retry:    backoff.Policy{BaseDelay: time.Second, MaxDelay: time.Minute, Rate: 10, Burst: 100},
	})
	require.NoError(t, err)
	return l, q
}

var (
	change = ports.Event{Key: key}
	resync = ports.Event{Key: key, Resync: true}
)

func TestLoop_timers(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		// run drives the Loop; sleep moves the bubble's clock.
		run  func(l *reconcile.Loop, sleep func(time.Duration))
		outs []func() (ports.Result, error)
		// want is when the queue was handed the key, and at which
		// class: a timer's a requeue, a change's ahead of it.
		want []queued
	}{
		{
			name: "After queues the key again after that long",
			outs: []func() (ports.Result, error){after(6 * s)},
			run:  func(l *reconcile.Loop, _ func(time.Duration)) { l.Reconcile(context.Background(), key) },
			want: []queued{requeued(6 * s)},
		},
		{
			name: "a change drops a pending After: its pass settles the key anew",
			outs: []func() (ports.Result, error){after(6 * s), after(6 * s)},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				sleep(2 * s)
				l.Notify(change)
				l.Reconcile(context.Background(), key)
			},
			want: []queued{changed(2 * s), requeued(8 * s)},
		},
		{
			name: "a change with no pass after it still drops the After",
			outs: []func() (ports.Result, error){after(6 * s)},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				sleep(2 * s)
				l.Notify(change)
			},
			want: []queued{changed(2 * s)},
		},
		{
			name: "a resync leaves a pending After",
			outs: []func() (ports.Result, error){after(6 * s)},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				sleep(2 * s)
				l.Notify(resync)
			},
			want: []queued{behind(2 * s), requeued(6 * s)},
		},
		{
			name: "the latest pass's After replaces the last",
			outs: []func() (ports.Result, error){after(10 * s), after(s)},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				sleep(s)
				l.Reconcile(context.Background(), key)
			},
			want: []queued{requeued(2 * s)},
		},
		{
			name: "a success without After drops a pending retry",
			outs: []func() (ports.Result, error){fails, after(0)},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				sleep(s / 2)
				l.Reconcile(context.Background(), key)
			},
			want: nil,
		},
		{
			name: "a panic drops a pending After: it is never retried",
			outs: []func() (ports.Result, error){after(6 * s), panics},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				sleep(s)
				l.Reconcile(context.Background(), key)
			},
			want: nil,
		},
		{
			name: "a panic drops a pending retry",
			outs: []func() (ports.Result, error){fails, panics},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				sleep(s / 2)
				l.Reconcile(context.Background(), key)
			},
			want: nil,
		},
		{
			name: "retries back off, and a success ends the backoff",
			outs: []func() (ports.Result, error){fails, fails, fails, after(0), fails},
			run: func(l *reconcile.Loop, sleep func(time.Duration)) {
				for range 3 {
					l.Reconcile(context.Background(), key)
					sleep(5 * s)
				}
				l.Reconcile(context.Background(), key)
				l.Reconcile(context.Background(), key)
			},
			// Failures at 0s, 5s and 10s retry after 1s, 2s and 4s; the
			// failure after the success at 15s retries after 1s again.
			want: []queued{requeued(1 * s), requeued(7 * s), requeued(14 * s), requeued(16 * s)},
		},
		{
			name: "Stop cancels every pending timer",
			outs: []func() (ports.Result, error){after(6 * s)},
			run: func(l *reconcile.Loop, _ func(time.Duration)) {
				l.Reconcile(context.Background(), key)
				l.Stop()
			},
			want: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, q := timed(t, tc.outs...)
				tc.run(l, time.Sleep)
				// Long past every timer the passes set.
				time.Sleep(time.Hour)
				synctest.Wait()
				require.Equal(t, tc.want, q.added())
				require.Zero(t, l.Pending(), "no timer is left pending")
			})
		})
	}
}

// TestLoop_timers_until: what a pass's Prepare carried ends at Until's
// time, and the key's one timer goes off then at the latest: a retry or
// an After that comes sooner still decides, one that comes later gives
// way, an end already past sets nothing, and a panic sets nothing either.
func TestLoop_timers_until(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name string
		out  func() (ports.Result, error)
		// ends is when Until says the pass's scenario ends, from the
		// test's start.
		ends time.Duration
		want []queued
	}{
		{"a success without After is reconciled again at the end", after(0), 10 * s, []queued{requeued(10 * s)}},
		{"an After sooner than the end decides", after(6 * s), 10 * s, []queued{requeued(6 * s)}},
		{"an end sooner than the After decides", after(time.Hour), 10 * s, []queued{requeued(10 * s)}},
		{"a retry sooner than the end decides", fails, 10 * s, []queued{requeued(1 * s)}},
		{"an end sooner than the retry decides", fails, s / 2, []queued{requeued(s / 2)}},
		{"an end already past sets no timer", after(0), -s, nil},
		{"a panic sets no timer", panics, 10 * s, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				q := &addsQueue{start: start}
				var asked []context.Context
				l, err := reconcile.New(reconcile.Config{
					Source:   fakeSource{obj: ports.Object{UID: "uid-1"}},
					Writer:   &fakeWriter{},
					Queue:    q,
					Handler:  &scripted{outcomes: []func() (ports.Result, error){tc.out}},
					Recorder: fakeRecorder{},
					Clock:    bubbleClock{},
					Retry:    backoff.Policy{BaseDelay: time.Second, MaxDelay: time.Minute, Rate: 10, Burst: 100},
					Prepare: func(ctx context.Context, _ ports.Object) context.Context {
						return context.WithValue(ctx, prepKey{}, true)
					},
					Until: func(ctx context.Context) (time.Time, bool) {
						asked = append(asked, ctx)
						return start.Add(tc.ends), true
					},
				})
				require.NoError(t, err)
				l.Reconcile(context.Background(), key)
				time.Sleep(time.Hour)
				synctest.Wait()
				require.Equal(t, tc.want, q.added())
				require.Len(t, asked, 1)
				require.Equal(t, true, asked[0].Value(prepKey{}), "Until is asked with the context Prepare returned")
			})
		})
	}
}

// TestLoop_lift: Lift queues again at once, as a requeue, a key
// whose latest pass failed carrying something, and drops its retry; it
// leaves alone a key whose latest pass carried nothing, or succeeded, or
// panicked, or was already lifted, and does nothing once the Loop stopped.
func TestLoop_lift(t *testing.T) {
	s, h := time.Second, time.Hour
	for _, tc := range []struct {
		name    string
		outs    []func() (ports.Result, error)
		carried bool
		// run drives the Loop at 1s; Lift comes at 10s.
		run  func(l *reconcile.Loop)
		want []queued
	}{
		{"a failure that carried a scenario is queued at once, its retry dropped", []func() (ports.Result, error){fails}, true,
			func(*reconcile.Loop) {}, []queued{requeued(10 * s)}},
		{"a failure that carried nothing keeps its retry", []func() (ports.Result, error){fails}, false,
			func(*reconcile.Loop) {}, []queued{requeued(h)}},
		{"a success after the failure isn't lifted", []func() (ports.Result, error){fails, after(h)}, true,
			func(l *reconcile.Loop) { l.Reconcile(context.Background(), key) }, []queued{requeued(h + s)}},
		{"a panic after the failure isn't lifted", []func() (ports.Result, error){fails, panics}, true,
			func(l *reconcile.Loop) { l.Reconcile(context.Background(), key) }, nil},
		{"a key is lifted once", []func() (ports.Result, error){fails}, true,
			func(l *reconcile.Loop) { l.Lift() }, []queued{requeued(s)}},
		{"a stopped Loop lifts nothing", []func() (ports.Result, error){fails}, true,
			func(l *reconcile.Loop) { l.Stop() }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := &addsQueue{start: time.Now()}
				var asked []context.Context
				l, err := reconcile.New(reconcile.Config{
					Source:   fakeSource{obj: ports.Object{UID: "uid-1"}},
					Writer:   &fakeWriter{},
					Queue:    q,
					Handler:  &scripted{outcomes: tc.outs},
					Recorder: fakeRecorder{},
					Clock:    bubbleClock{},
					// A failure's retry waits an hour: only Lift queues it sooner.
					Retry: backoff.Policy{BaseDelay: h, MaxDelay: 2 * h, Rate: 10, Burst: 100},
					Prepare: func(ctx context.Context, _ ports.Object) context.Context {
						return context.WithValue(ctx, prepKey{}, true)
					},
					Carried: func(ctx context.Context) bool {
						asked = append(asked, ctx)
						return tc.carried
					},
				})
				require.NoError(t, err)
				l.Reconcile(context.Background(), key)
				time.Sleep(s)
				tc.run(l)
				time.Sleep(9 * s)
				l.Lift()
				time.Sleep(3 * h)
				synctest.Wait()
				require.Equal(t, tc.want, q.added())
				require.NotEmpty(t, asked)
				require.Equal(t, true, asked[0].Value(prepKey{}), "Carried is asked with the context Prepare returned")
			})
		})
	}
}
