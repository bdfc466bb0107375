package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

const (
	configMaps = "configmaps"
	secrets    = "/v1, Resource=secrets"
)

// configMap names the ConfigMap name in key's namespace as a cause.
func configMap(name string) ports.Cause {
	return ports.Cause{Resource: configMaps, Key: ports.Key{Namespace: key.Namespace, Name: name}}
}

// related is the event of c's change, mapped to key.
func related(c ports.Cause) ports.Event {
	return ports.Event{Key: key, Cause: c}
}

// manyConfigMaps returns n distinct ConfigMaps as causes, cm-0 to cm-<n-1>.
func manyConfigMaps(n int) []ports.Cause {
	cs := make([]ports.Cause, n)
	for i := range cs {
		cs[i] = configMap(fmt.Sprintf("cm-%d", i))
	}
	return cs
}

// relatedAll returns the events of each of cs's changes, in order.
func relatedAll(cs ...ports.Cause) []ports.Event {
	evs := make([]ports.Event, len(cs))
	for i, c := range cs {
		evs[i] = related(c)
	}
	return evs
}

// started expects the start of key's reconcile, returning a context inSpan
// matches.
func (m mocks) started() *portsmock.MockRecorderReconcileStartedCall {
	return m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).
		DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context {
			return context.WithValue(ctx, spanKey{}, "span")
		})
}

// reconciled expects a whole reconcile of obj, from its start to its end,
// that succeeds; caused, when not nil, is the expected call of
// ReconcileCaused, which must come right after the start.
func (m mocks) reconciled(obj ports.Object, caused *portsmock.MockRecorderReconcileCausedCall) {
	calls := []any{m.started()}
	if caused != nil {
		calls = append(calls, caused)
	}
	calls = append(calls,
		m.handler.EXPECT().Reconcile(inSpan(), obj).Return(ports.Result{}, nil),
		m.rec.EXPECT().ReconcileEnded(inSpan(), key, gomock.Any()))
	gomock.InOrder(calls...)
}

// noCauses expects no ReconcileCaused at all.
func (m mocks) noCauses() {
	m.rec.EXPECT().ReconcileCaused(gomock.Any(), gomock.Any(), gomock.Any()).Times(0)
}

func TestLoop_Reconcile_reports_the_related_changes_that_queued_it(t *testing.T) {
	ten := manyConfigMaps(10)
	for _, tc := range []struct {
		name    string
		events  []ports.Event
		causes  []ports.Cause // nil when ReconcileCaused isn't called
		dropped int
	}{
		{
			name:   "a related change is the reconcile's cause",
			events: relatedAll(configMap("flags")),
			causes: []ports.Cause{configMap("flags")},
		},
		{
			name:   "causes accumulate in the order they came",
			events: relatedAll(configMap("a"), configMap("b")),
			causes: []ports.Cause{configMap("a"), configMap("b")},
		},
		{
			name:   "an object that changes again is one cause",
			events: relatedAll(configMap("a"), configMap("b"), configMap("a"), configMap("a")),
			causes: []ports.Cause{configMap("a"), configMap("b")},
		},
		{
			name: "the same name in another resource is another cause",
			events: relatedAll(configMap("a"),
				ports.Cause{Resource: secrets, Key: configMap("a").Key}),
			causes: []ports.Cause{configMap("a"), {Resource: secrets, Key: configMap("a").Key}},
		},
		{
			name:    "beyond MaxCauses, changes are only counted",
			events:  relatedAll(ten...),
			causes:  ten[:reconcile.MaxCauses],
			dropped: 10 - reconcile.MaxCauses,
		},
		{
			name:    "beyond the bound, a kept object's change is still one cause",
			events:  relatedAll(append(ten[:reconcile.MaxCauses+1:reconcile.MaxCauses+1], ten[0])...),
			causes:  ten[:reconcile.MaxCauses],
			dropped: 1,
		},
		{
			name: "a dropped object's change counts each time",
			events: relatedAll(append(ten[:reconcile.MaxCauses+1:reconcile.MaxCauses+1],
				ten[reconcile.MaxCauses])...),
			causes:  ten[:reconcile.MaxCauses],
			dropped: 2,
		},
		{
			name:   "the object's own changes and resyncs are no cause",
			events: []ports.Event{change, related(configMap("a")), resync, change},
			causes: []ports.Cause{configMap("a")},
		},
		{
			name:   "own changes and resyncs alone report no cause",
			events: []ports.Event{change, resync, change},
		},
		{
			name: "another key's causes are its own",
			events: []ports.Event{
				{Key: ports.Key{Namespace: "ns", Name: "other"}, Cause: configMap("a")},
				related(configMap("b")),
			},
			causes: []ports.Cause{configMap("b")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMocks(t)
			l := m.loop(t, "", nil)
			for _, ev := range tc.events {
				if ev.Resync {
					m.queue.EXPECT().AddBackground(ev.Key)
				} else {
					m.queue.EXPECT().Add(ev.Key)
				}
				l.Notify(ev)
			}

			obj := object()
			m.source.EXPECT().Get(key).Return(obj, true, nil)
			var caused *portsmock.MockRecorderReconcileCausedCall
			if tc.causes != nil {
				caused = m.rec.EXPECT().ReconcileCaused(inSpan(), tc.causes, tc.dropped)
			} else {
				m.noCauses()
			}
			m.reconciled(obj, caused)

			l.Reconcile(t.Context(), key)
		})
	}
}

func TestLoop_Reconcile_takes_the_causes_once(t *testing.T) {
	for _, tc := range []struct {
		name string
		// read expects the first pass's read from the cache, and first
		// the calls that pass makes after it.
		read  func(m mocks) *portsmock.MockObjectSourceGetCall
		first func(m mocks)
	}{
		{
			name: "a reconcile reports them",
			read: func(m mocks) *portsmock.MockObjectSourceGetCall {
				return m.source.EXPECT().Get(key).Return(object(), true, nil)
			},
			first: func(m mocks) {
				m.reconciled(object(), m.rec.EXPECT().ReconcileCaused(inSpan(), []ports.Cause{configMap("a")}, 0))
			},
		},
		{
			name: "a failed cache read is a reconcile, and reports them",
			read: func(m mocks) *portsmock.MockObjectSourceGetCall {
				return m.source.EXPECT().Get(key).Return(ports.Object{}, false, errBoom)
			},
			first: func(m mocks) {
				gomock.InOrder(
					m.started(),
					m.rec.EXPECT().ReconcileCaused(inSpan(), []ports.Cause{configMap("a")}, 0),
					m.retried(),
					m.rec.EXPECT().ReconcileEnded(inSpan(), key, gomock.Any()),
				)
			},
		},
		{
			name: "a skip of an object gone from the cache drops them unreported",
			read: func(m mocks) *portsmock.MockObjectSourceGetCall {
				return m.source.EXPECT().Get(key).Return(ports.Object{}, false, nil)
			},
			first: func(mocks) {},
		},
		{
			name: "a skip of an object being deleted drops them unreported",
			read: func(m mocks) *portsmock.MockObjectSourceGetCall {
				return m.source.EXPECT().Get(key).Return(deleting(), true, nil)
			},
			first: func(mocks) {},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMocks(t)
			l := m.loop(t, "", nil)
			m.queue.EXPECT().Add(key)
			l.Notify(related(configMap("a")))

			tc.read(m)
			tc.first(m)
			l.Reconcile(t.Context(), key)

			// The next pass, with no change in between, has no cause.
			m.source.EXPECT().Get(key).Return(object(), true, nil)
			m.noCauses()
			m.reconciled(object(), nil)
			l.Reconcile(t.Context(), key)
		})
	}
}

func TestLoop_Stop_drops_the_causes(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, "", nil)
	m.queue.EXPECT().Add(key).Times(2)
	m.queue.EXPECT().ShutDown()
	l.Notify(related(configMap("before")))
	l.Stop()
	l.Notify(related(configMap("after")))

	// Reconcile, unlike Next, runs a pass on a stopped Loop: it shows what
	// the Loop kept.
	m.source.EXPECT().Get(key).Return(object(), true, nil)
	m.noCauses()
	m.reconciled(object(), nil)
	l.Reconcile(t.Context(), key)
}

// causeCounter is a Recorder that counts the causes reported, and the
// changes dropped.
type causeCounter struct {
	fakeRecorder

	mu      sync.Mutex
	reports int
	changes int
}

func (c *causeCounter) ReconcileCaused(_ context.Context, causes []ports.Cause, dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reports++
	c.changes += len(causes) + dropped
}

func (c *causeCounter) counted() (reports, changes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reports, c.changes
}

// TestLoop_every_change_is_reported_or_counted_once has informers notify
// distinct related changes while a worker reconciles: each change is
// either one of a pass's causes or one of its dropped, exactly once. It
// is the race detector's, too.
func TestLoop_every_change_is_reported_or_counted_once(t *testing.T) {
	const informers, changes = 4, 500
	rec := &causeCounter{}
	l, err := reconcile.New(reconcile.Config{
		Source:   fakeSource{obj: ports.Object{UID: "uid-1"}},
		Writer:   &fakeWriter{},
		Queue:    fakeQueue{},
		Handler:  fakeHandler{},
		Recorder: rec,
		Clock:    &fixedClock{},
	})
	require.NoError(t, err)

	var wg sync.WaitGroup
	for i := range informers {
		wg.Go(func() {
			for j := range changes {
				l.Notify(related(configMap(fmt.Sprintf("cm-%d-%d", i, j))))
			}
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		l.Reconcile(t.Context(), key)
	}
	// Whatever came after the last pass began.
	l.Reconcile(t.Context(), key)

	reports, counted := rec.counted()
	require.Equal(t, informers*changes, counted)
	require.Positive(t, reports)
}

func TestLoop_Notify_allocates_nothing_for_an_event_without_a_cause(t *testing.T) {
	l, err := reconcile.New(reconcile.Config{
		Source:   fakeSource{},
		Writer:   &fakeWriter{},
		Queue:    fakeQueue{},
		Handler:  fakeHandler{},
		Recorder: fakeRecorder{},
		Clock:    &fixedClock{},
	})
	require.NoError(t, err)
	for _, ev := range []ports.Event{change, resync} {
		require.Zero(t, testing.AllocsPerRun(100, func() { l.Notify(ev) }), "resync %t", ev.Resync)
	}
}
