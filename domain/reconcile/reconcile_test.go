package reconcile_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

const fin = "cache.example.com/finalizer"

var (
	key = ports.Key{Namespace: "ns", Name: "m"}

	errBoom  = errors.New("boom")
	errApply = errors.New("the server is on fire")
)

// spanKey and prepKey mark the contexts the Recorder and a Prepare return,
// so a test can tell which context each port was handed.
type (
	spanKey struct{}
	prepKey struct{}
)

// inSpan matches a context the Recorder's ReconcileStarted returned.
func inSpan() gomock.Matcher {
	return gomock.Cond(func(ctx context.Context) bool { return ctx.Value(spanKey{}) == "span" })
}

// prepared matches a context that also went through the Prepare of
// prepareValue.
func prepared() gomock.Matcher {
	return gomock.Cond(func(ctx context.Context) bool {
		return ctx.Value(spanKey{}) == "span" && ctx.Value(prepKey{}) == "prepared"
	})
}

func prepareValue(ctx context.Context, _ ports.Object) context.Context {
	return context.WithValue(ctx, prepKey{}, "prepared")
}

type mocks struct {
	source  *portsmock.MockObjectSource
	writer  *portsmock.MockWriter
	queue   *portsmock.MockQueue
	handler *portsmock.MockHandler
	rec     *portsmock.MockRecorder
	clock   *portsmock.MockClock
}

// newMocks returns the ports' mocks. The clock moves one second each time
// it is read; a test expects each timer the Loop sets with retried or
// after, and any other is a failure.
func newMocks(t *testing.T) mocks {
	ctrl := gomock.NewController(t)
	m := mocks{
		source:  portsmock.NewMockObjectSource(ctrl),
		writer:  portsmock.NewMockWriter(ctrl),
		queue:   portsmock.NewMockQueue(ctrl),
		handler: portsmock.NewMockHandler(ctrl),
		rec:     portsmock.NewMockRecorder(ctrl),
		clock:   portsmock.NewMockClock(ctrl),
	}
	// Locked: a test may reconcile several keys at once.
	var (
		mu  sync.Mutex
		now time.Time
	)
	m.clock.EXPECT().Now().DoAndReturn(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}).AnyTimes()
	return m
}

// retried expects the timer of a first retry: backoff.Default's 5ms.
func (m mocks) retried() *portsmock.MockClockAfterFuncCall {
	return m.after(5 * time.Millisecond)
}

// after expects a timer of d, which never fires.
func (m mocks) after(d time.Duration) *portsmock.MockClockAfterFuncCall {
	return m.clock.EXPECT().AfterFunc(d, gomock.Any()).Return(func() bool { return true })
}

func (m mocks) loop(t *testing.T, finalizer string, prepare reconcile.Prepare) *reconcile.Loop {
	l, err := reconcile.New(reconcile.Config{
		Source: m.source, Writer: m.writer, Queue: m.queue, Handler: m.handler,
		Recorder: m.rec, Clock: m.clock, Finalizer: finalizer, Prepare: prepare,
	})
	require.NoError(t, err)
	return l
}

// object returns a cached object with the given finalizers.
func object(finalizers ...string) ports.Object {
	return ports.Object{
		UID:         "uid-1",
		Finalizers:  finalizers,
		Annotations: map[string]string{"a": "b"},
		Status:      []byte(`{"ready":1}`),
		JSON:        []byte(`{"kind":"Memcached"}`),
	}
}

func deleting(finalizers ...string) ports.Object {
	o := object(finalizers...)
	o.Deleting = true
	return o
}

// panicking is the end user's code that panics; the recorded stack has to
// name it.
func panicking(v any) {
	panic(v)
}

// want is how a test expects a reconcile to be reported.
type want struct {
	outcome ports.Outcome
	errIs   []error  // errors the reported error wraps
	errHas  []string // text the reported error contains
	panic   any      // the recovered value
}

func TestLoop_Reconcile(t *testing.T) {
	obj := object()
	for _, tc := range []struct {
		name      string
		finalizer string
		prepare   reconcile.Prepare
		obj       ports.Object
		found     bool
		getErr    error
		// calls sets the expected calls of the writer, the handler and the
		// queue, returned in the order they must happen.
		calls func(m mocks, obj ports.Object) []any
		want  *want // nil when the pass is no reconcile, and isn't recorded
	}{
		{
			name:  "an object gone from the cache is forgotten and never reconciled",
			found: false,
			calls: func(m mocks, _ ports.Object) []any { return nil },
		},
		{
			name:  "an object being deleted is left alone without a Finalize",
			obj:   deleting("someone-else"),
			found: true,
			calls: func(m mocks, _ ports.Object) []any { return nil },
		},
		{
			name:      "an object being deleted that the finalizer doesn't hold is left alone",
			finalizer: fin,
			obj:       deleting("someone-else"),
			found:     true,
			calls:     func(m mocks, _ ports.Object) []any { return nil },
		},
		{
			name:   "a failed cache read is retried",
			getErr: errBoom,
			calls:  func(m mocks, _ ports.Object) []any { return []any{m.retried()} },
			want:   &want{outcome: ports.OutcomeError, errIs: []error{errBoom}, errHas: []string{"reading ns/m from the cache"}},
		},
		{
			name:      "the finalizer is added before the first reconcile, and that is the whole pass",
			finalizer: fin,
			obj:       object("someone-else"),
			found:     true,
			calls: func(m mocks, _ ports.Object) []any {
				return []any{
					m.writer.EXPECT().ApplyFinalizer(inSpan(), key, obj.UID, fin, true).Return(nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:      "adding the finalizer fails: retried",
			finalizer: fin,
			obj:       object(),
			found:     true,
			calls: func(m mocks, _ ports.Object) []any {
				return []any{
					m.writer.EXPECT().ApplyFinalizer(inSpan(), key, obj.UID, fin, true).Return(errApply),
					m.retried(),
				}
			},
			want: &want{outcome: ports.OutcomeError, errIs: []error{errApply}, errHas: []string{`adding finalizer "cache.example.com/finalizer"`}},
		},
		{
			name:      "an object the finalizer holds is reconciled",
			finalizer: fin,
			obj:       object(fin),
			found:     true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{}, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:      "an object being deleted that the finalizer holds is finalized, never reconciled, and let go",
			finalizer: fin,
			obj:       deleting("someone-else", fin),
			found:     true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Finalize(inSpan(), o).Return(nil),
					m.writer.EXPECT().ApplyFinalizer(inSpan(), key, obj.UID, fin, false).Return(nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:      "a Finalize error retries the object and keeps the finalizer",
			finalizer: fin,
			obj:       deleting(fin),
			found:     true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Finalize(inSpan(), o).Return(errBoom),
					m.retried(),
				}
			},
			want: &want{outcome: ports.OutcomeError, errIs: []error{errBoom}, errHas: []string{`finalize "cache.example.com/finalizer": boom`}},
		},
		{
			name:      "a Finalize panic is recorded and forgotten, and the finalizer stays",
			finalizer: fin,
			obj:       deleting(fin),
			found:     true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Finalize(inSpan(), o).DoAndReturn(func(context.Context, ports.Object) error { panicking("finalize blew up"); return nil }),
				}
			},
			want: &want{outcome: ports.OutcomePanic, panic: "finalize blew up"},
		},
		{
			name:      "a finalizer another field manager holds fails the reconcile, saying so, and retries",
			finalizer: fin,
			obj:       deleting(fin),
			found:     true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Finalize(inSpan(), o).Return(nil),
					m.writer.EXPECT().ApplyFinalizer(inSpan(), key, obj.UID, fin, false).
						Return(&ports.FinalizerHeldError{Finalizer: fin, Managers: []string{"kubectl-edit"}}),
					m.retried(),
				}
			},
			want: &want{outcome: ports.OutcomeError, errHas: []string{
				`removing finalizer "cache.example.com/finalizer": finalizer "cache.example.com/finalizer" is also set by field manager "kubectl-edit"`,
			}},
		},
		{
			name:  "a nil status leaves the status alone",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{}, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:  "a status that differs is applied",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{Status: []byte(`{"ready":2}`)}, nil),
					m.writer.EXPECT().ApplyStatus(inSpan(), key, obj.UID, []byte(`{"ready":2}`)).Return(nil, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:  "the same status, encoded differently, isn't applied",
			obj:   ports.Object{UID: "uid-1", Status: []byte(`{"conditions":[{"status":"True","type":"Available"}],"ready":1}`)},
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).
						Return(ports.Result{Status: []byte(`{"ready": 1, "conditions": [{"type": "Available", "status": "True"}], "note": null}`)}, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:  "an empty status of an object with none isn't applied",
			obj:   ports.Object{UID: "uid-1"},
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{Status: []byte(`{}`)}, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:  "the status is applied when Reconcile fails, and the object is retried",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{Status: []byte(`{"ready":0}`)}, errBoom),
					m.writer.EXPECT().ApplyStatus(inSpan(), key, obj.UID, []byte(`{"ready":0}`)).Return(nil, nil),
					m.retried(),
				}
			},
			want: &want{outcome: ports.OutcomeError, errIs: []error{errBoom}},
		},
		{
			name:  "a failed status apply is retried",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{Status: []byte(`{"ready":2}`), After: time.Minute}, nil),
					m.writer.EXPECT().ApplyStatus(inSpan(), key, obj.UID, []byte(`{"ready":2}`)).Return(nil, errApply),
					m.retried(),
				}
			},
			want: &want{outcome: ports.OutcomeError, errIs: []error{errApply}, errHas: []string{"applying status: the server is on fire"}},
		},
		{
			name:  "a failed Reconcile and a failed status apply are both reported",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{Status: []byte(`{"ready":2}`)}, errBoom),
					m.writer.EXPECT().ApplyStatus(inSpan(), key, obj.UID, []byte(`{"ready":2}`)).Return(nil, errApply),
					m.retried(),
				}
			},
			want: &want{outcome: ports.OutcomeError, errIs: []error{errBoom, errApply}},
		},
		{
			name:  "a positive After forgets the backoff and queues the object after that long",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{After: time.Minute}, nil),
					m.after(time.Minute),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:  "an error retries with backoff, whatever After says",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{After: time.Minute}, errBoom),
					m.retried(),
				}
			},
			want: &want{outcome: ports.OutcomeError, errIs: []error{errBoom}},
		},
		{
			name:  "a negative After is no After",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{After: -time.Second}, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:  "a Reconcile panic is recorded and forgotten, with no status applied",
			obj:   obj,
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).DoAndReturn(func(context.Context, ports.Object) (ports.Result, error) {
						panicking("index out of range")
						return ports.Result{Status: []byte(`{"ready":9}`)}, nil
					}),
				}
			},
			want: &want{outcome: ports.OutcomePanic, panic: "index out of range"},
		},
		{
			name:    "Prepare runs first: its context reaches the finalizer's apply",
			prepare: prepareValue, finalizer: fin,
			obj:   object(),
			found: true,
			calls: func(m mocks, _ ports.Object) []any {
				return []any{
					m.writer.EXPECT().ApplyFinalizer(prepared(), key, obj.UID, fin, true).Return(nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:    "Prepare's context reaches Finalize and the finalizer's removal",
			prepare: prepareValue, finalizer: fin,
			obj:   deleting(fin),
			found: true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Finalize(prepared(), o).Return(nil),
					m.writer.EXPECT().ApplyFinalizer(prepared(), key, obj.UID, fin, false).Return(nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:    "Prepare's context reaches Reconcile and the status apply",
			prepare: prepareValue,
			obj:     obj,
			found:   true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(prepared(), o).Return(ports.Result{Status: []byte(`{"ready":2}`)}, nil),
					m.writer.EXPECT().ApplyStatus(prepared(), key, obj.UID, []byte(`{"ready":2}`)).Return(nil, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:    "a Prepare that returns no context leaves the reconcile's",
			prepare: func(context.Context, ports.Object) context.Context { return nil },
			obj:     obj,
			found:   true,
			calls: func(m mocks, o ports.Object) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{}, nil),
				}
			},
			want: &want{outcome: ports.OutcomeSuccess},
		},
		{
			name:      "a Prepare panic is the reconcile's: forgotten, and no finalizer or status applied",
			prepare:   func(context.Context, ports.Object) context.Context { panicking("trust blew up"); return nil },
			finalizer: fin,
			obj:       object(),
			found:     true,
			calls:     func(m mocks, _ ports.Object) []any { return nil },
			want:      &want{outcome: ports.OutcomePanic, panic: "trust blew up"},
		},
		{
			name: "Prepare isn't run for an object that is skipped",
			prepare: func(context.Context, ports.Object) context.Context {
				panic("Prepare ran for a skipped object")
			},
			obj:   deleting(),
			found: true,
			calls: func(m mocks, _ ports.Object) []any { return nil },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMocks(t)
			l := m.loop(t, tc.finalizer, tc.prepare)
			m.source.EXPECT().Get(key).Return(tc.obj, tc.found, tc.getErr)

			calls := tc.calls(m, tc.obj)
			var got *ports.Report
			if tc.want != nil {
				started := m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).
					DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context {
						return context.WithValue(ctx, spanKey{}, "span")
					})
				ended := m.rec.EXPECT().ReconcileEnded(inSpan(), key, gomock.Any()).
					Do(func(_ context.Context, _ ports.Key, r ports.Report) { got = &r })
				calls = append(append([]any{started}, calls...), ended)
			}
			gomock.InOrder(calls...)

			l.Reconcile(t.Context(), key)

			if tc.want == nil {
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tc.want.outcome, got.Outcome)
			require.Equal(t, time.Second, got.Duration, "the clock moves a second between the start and the end")
			switch tc.want.outcome {
			case ports.OutcomeSuccess:
				require.NoError(t, got.Err)
				require.Nil(t, got.Panic)
			case ports.OutcomeError:
				require.Error(t, got.Err)
				require.Nil(t, got.Panic)
				for _, e := range tc.want.errIs {
					require.ErrorIs(t, got.Err, e)
				}
				for _, s := range tc.want.errHas {
					require.ErrorContains(t, got.Err, s)
				}
			case ports.OutcomePanic:
				require.NoError(t, got.Err)
				require.NotNil(t, got.Panic)
				require.Equal(t, tc.want.panic, got.Panic.Value)
				require.Contains(t, string(got.Panic.Stack), "reconcile_test.panicking(", "the stack is the panic's")
			}
		})
	}
}

func TestLoop_Reconcile_reports_a_held_finalizer_as_its_type(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, fin, nil)
	obj := deleting(fin)
	held := &ports.FinalizerHeldError{Finalizer: fin}
	m.source.EXPECT().Get(key).Return(obj, true, nil)
	m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx })
	m.handler.EXPECT().Finalize(gomock.Any(), obj).Return(nil)
	m.writer.EXPECT().ApplyFinalizer(gomock.Any(), key, obj.UID, fin, false).Return(held)
	m.retried()
	var got ports.Report
	m.rec.EXPECT().ReconcileEnded(gomock.Any(), key, gomock.Any()).Do(func(_ context.Context, _ ports.Key, r ports.Report) { got = r })

	l.Reconcile(t.Context(), key)

	var asHeld *ports.FinalizerHeldError
	require.ErrorAs(t, got.Err, &asHeld)
	require.Same(t, held, asHeld)
}

func TestLoop_Reconcile_recovers_a_panic_of_nil(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, "", nil)
	obj := object()
	m.source.EXPECT().Get(key).Return(obj, true, nil)
	m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx })
	m.handler.EXPECT().Reconcile(gomock.Any(), obj).DoAndReturn(func(context.Context, ports.Object) (ports.Result, error) {
		panicking(nil)
		return ports.Result{}, nil
	})
	var got ports.Report
	m.rec.EXPECT().ReconcileEnded(gomock.Any(), key, gomock.Any()).Do(func(_ context.Context, _ ports.Key, r ports.Report) { got = r })

	l.Reconcile(t.Context(), key)

	require.Equal(t, ports.OutcomePanic, got.Outcome)
	var nilPanic *runtime.PanicNilError
	require.ErrorAs(t, got.Panic.Value.(error), &nilPanic)
}

func TestLoop_Next_reconciles_one_key_and_marks_it_done(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, "", nil)
	gomock.InOrder(
		m.queue.EXPECT().Get().Return(key, false),
		m.source.EXPECT().Get(key).Return(ports.Object{}, false, nil),
		m.queue.EXPECT().Done(key),
	)
	require.True(t, l.Next(t.Context()))
}

func TestLoop_Next_marks_a_key_done_when_its_pass_panics(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, "", nil)
	gomock.InOrder(
		m.queue.EXPECT().Get().Return(key, false),
		m.source.EXPECT().Get(key).DoAndReturn(func(ports.Key) (ports.Object, bool, error) { panic("a broken adapter") }),
		m.queue.EXPECT().Done(key),
	)
	require.PanicsWithValue(t, "a broken adapter", func() { l.Next(t.Context()) },
		"only the end user's code is recovered: a bug of loam's own crashes")
}

func TestLoop_Next_returns_false_once_the_queue_is_shut_down(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, "", nil)
	m.queue.EXPECT().Get().Return(ports.Key{}, true)
	require.False(t, l.Next(t.Context()))
}

func TestLoop_Stop_shuts_the_queue_down_and_leaves_its_backlog(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, "", nil)
	gomock.InOrder(
		m.queue.EXPECT().ShutDown(),
		// client-go's queue still hands out what it holds after ShutDown.
		m.queue.EXPECT().Get().Return(key, false),
		m.queue.EXPECT().Done(key),
	)
	l.Stop()
	require.False(t, l.Next(t.Context()), "no key is taken once stopped")
}

func TestNew_reports_every_missing_port(t *testing.T) {
	_, err := reconcile.New(reconcile.Config{Queue: portsmock.NewMockQueue(gomock.NewController(t))})
	require.EqualError(t, err, "reconcile: Config.Source is nil\n"+
		"reconcile: Config.Writer is nil\n"+
		"reconcile: Config.Handler is nil\n"+
		"reconcile: Config.Recorder is nil\n"+
		"reconcile: Config.Clock is nil")
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name      string
		obj       ports.Object
		found     bool
		finalizer string
		want      reconcile.Step
	}{
		{"absent", ports.Object{}, false, fin, reconcile.StepSkip},
		{"absent without a Finalize", ports.Object{}, false, "", reconcile.StepSkip},
		{"present, no Finalize", object(), true, "", reconcile.StepReconcile},
		{"present, no Finalize, another's finalizer", object("other"), true, "", reconcile.StepReconcile},
		{"present, finalizer missing", object("other"), true, fin, reconcile.StepAddFinalizer},
		{"present, finalizer there", object("other", fin), true, fin, reconcile.StepReconcile},
		{"deleting, no Finalize", deleting("other"), true, "", reconcile.StepSkip},
		{"deleting, finalizer missing", deleting("other"), true, fin, reconcile.StepSkip},
		{"deleting, no finalizers at all", deleting(), true, fin, reconcile.StepSkip},
		{"deleting, finalizer there", deleting(fin), true, fin, reconcile.StepFinalize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, reconcile.Decide(tc.obj, tc.found, tc.finalizer))
		})
	}
}

func TestStep_String(t *testing.T) {
	require.Equal(t, "skip", reconcile.StepSkip.String())
	require.Equal(t, "add finalizer", reconcile.StepAddFinalizer.String())
	require.Equal(t, "finalize", reconcile.StepFinalize.String())
	require.Equal(t, "reconcile", reconcile.StepReconcile.String())
	require.Equal(t, "Step(9)", reconcile.Step(9).String())
}
