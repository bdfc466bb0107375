package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// The tests in this file bound the end user's calls with Config.Timeout,
// inside synctest bubbles: the deadline's context and the retries' timers
// run on the bubble's clock, so a call cancelled at its deadline is
// cancelled at exactly that instant.

const timeout = 2 * time.Second

// errLost stands for the controller's ErrLostLeadership: the cause a lost
// Lease cancels the reconciles in flight with.
var errLost = errors.New("lost the Lease")

// bubbleMocks are the ports' mocks, but for the clock: a Loop on them runs
// on the bubble's, so its retries fire as time passes.
type bubbleMocks struct {
	mocks
	start time.Time
	// adds is when the queue was handed the key, since start.
	adds *[]time.Duration
}

func newBubbleMocks(t *testing.T) bubbleMocks {
	return bubbleMocks{mocks: newMocks(t), start: time.Now(), adds: new([]time.Duration)}
}

// added expects the queue to be handed the key, as a timer does — as a
// requeue — and notes when.
func (m bubbleMocks) added() any {
	return m.queue.EXPECT().AddRequeue(key).Do(func(ports.Key) { *m.adds = append(*m.adds, m.since()) })
}

func (m bubbleMocks) loop(t *testing.T, finalizer string) *reconcile.Loop {
	t.Helper()
	l, err := reconcile.New(reconcile.Config{
		Source: m.source, Writer: m.writer, Queue: m.queue, Handler: m.handler,
		Recorder: m.rec, Clock: bubbleClock{}, Finalizer: finalizer, Timeout: timeout,
	})
	require.NoError(t, err)
	return l
}

// since returns how long after the test began it is, on the bubble's
// clock.
func (m bubbleMocks) since() time.Duration { return time.Since(m.start) }

// reconciled expects one reconcile of key, and returns its report once it
// has ended.
func (m bubbleMocks) reconciled() func() ports.Report {
	var got *ports.Report
	m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).
		DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context {
			return context.WithValue(ctx, spanKey{}, "span")
		})
	m.rec.EXPECT().ReconcileEnded(inSpan(), key, gomock.Any()).
		Do(func(_ context.Context, _ ports.Key, r ports.Report) { got = &r })
	return func() ports.Report {
		if got == nil {
			return ports.Report{Outcome: -1}
		}
		return *got
	}
}

// alive matches the reconcile's own context, its span's, while it is
// still alive: not the call's, which its deadline has ended.
func alive() gomock.Matcher {
	return gomock.Cond(func(ctx context.Context) bool { return ctx.Value(spanKey{}) == "span" && ctx.Err() == nil })
}

// hung is a call of the end user's that waits for its context to end,
// as one stuck on a request that honours its context does. It records
// when the context ended and with what cause.
type hung struct {
	m       bubbleMocks
	endedAt time.Duration
	cause   error
	err     error
}

func (h *hung) wait(ctx context.Context) error {
	<-ctx.Done()
	h.endedAt, h.cause, h.err = h.m.since(), context.Cause(ctx), ctx.Err()
	return h.err
}

// requireTimedOut checks r is a timeout of the call step names, at the
// Loop's deadline.
func requireTimedOut(t *testing.T, r ports.Report, step string) {
	t.Helper()
	require.Equal(t, ports.OutcomeTimeout, r.Outcome)
	require.Equal(t, timeout, r.Timeout)
	require.Equal(t, timeout, r.Duration, "the reconcile ended at its deadline")
	require.ErrorIs(t, r.Err, context.DeadlineExceeded)
	require.ErrorContains(t, r.Err, step+" of ns/m timed out after 2s: context deadline exceeded")
	var deadline *reconcile.DeadlineError
	require.ErrorAs(t, r.Err, &deadline)
	require.Equal(t, reconcile.DeadlineError{Step: map[string]reconcile.Step{
		"reconcile": reconcile.StepReconcile, "finalize": reconcile.StepFinalize,
	}[step], Key: key, Timeout: timeout}, *deadline)
	require.Nil(t, r.Panic)
}

func TestLoop_Reconcile_cancels_a_hung_Reconcile_at_its_deadline_and_retries_it(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newBubbleMocks(t)
		l := m.loop(t, "")
		obj := object()
		h := &hung{m: m}

		// The first pass hangs until its deadline, and returns a status
		// that says so; the retry succeeds.
		first := m.reconciled()
		gomock.InOrder(
			m.source.EXPECT().Get(key).Return(obj, true, nil),
			m.handler.EXPECT().Reconcile(inSpan(), obj).DoAndReturn(func(ctx context.Context, _ ports.Object) (ports.Result, error) {
				deadline, ok := ctx.Deadline()
				require.True(t, ok, "the call's context has a deadline")
				require.Equal(t, m.start.Add(timeout), deadline)
				err := h.wait(ctx)
				return ports.Result{Status: []byte(`{"ready":0,"timedOut":true}`), After: time.Minute}, err
			}),
			// Applied in the reconcile's context, which is still alive.
			m.writer.EXPECT().ApplyStatus(alive(), key, obj.UID, []byte(`{"ready":0,"timedOut":true}`)).Return(nil, nil),
			m.added(),
		)

		l.Reconcile(t.Context(), key)

		require.Equal(t, timeout, h.endedAt, "cancelled at exactly the deadline")
		require.ErrorIs(t, h.err, context.DeadlineExceeded, "the call's context says its deadline passed")
		var cause *reconcile.DeadlineError
		require.ErrorAs(t, h.cause, &cause, "with a cause of the Loop's own")
		require.EqualError(t, h.cause, "reconcile of ns/m timed out after 2s: context deadline exceeded")
		r := first()
		requireTimedOut(t, r, "reconcile")
		require.Equal(t, "reconcile of ns/m timed out after 2s: context deadline exceeded\ncontext deadline exceeded", r.Err.Error(),
			"the error the call returned follows the deadline's")

		// The retry comes after the first backoff, 5ms, not the After: a
		// timeout is a failure.
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, []time.Duration{timeout + 5*time.Millisecond}, *m.adds)

		second := m.reconciled()
		gomock.InOrder(
			m.source.EXPECT().Get(key).Return(obj, true, nil),
			m.handler.EXPECT().Reconcile(inSpan(), obj).Return(ports.Result{Status: []byte(`{"ready":1,"timedOut":false}`)}, nil),
			m.writer.EXPECT().ApplyStatus(alive(), key, obj.UID, []byte(`{"ready":1,"timedOut":false}`)).Return(nil, nil),
		)
		l.Reconcile(t.Context(), key)
		require.Equal(t, ports.OutcomeSuccess, second().Outcome)
		require.NoError(t, second().Err)
		require.Zero(t, l.Pending(), "a success ends the backoff")
	})
}

func TestLoop_Reconcile_cancels_a_hung_Finalize_at_its_deadline_keeps_the_finalizer_and_retries_it(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newBubbleMocks(t)
		l := m.loop(t, fin)
		obj := deleting(fin)
		h := &hung{m: m}

		// No ApplyFinalizer is expected: the mock fails the test if the
		// timed-out Finalize lets the object go.
		first := m.reconciled()
		gomock.InOrder(
			m.source.EXPECT().Get(key).Return(obj, true, nil),
			m.handler.EXPECT().Finalize(inSpan(), obj).DoAndReturn(func(ctx context.Context, _ ports.Object) error {
				return h.wait(ctx)
			}),
			m.added(),
		)

		l.Reconcile(t.Context(), key)

		require.Equal(t, timeout, h.endedAt, "cancelled at exactly the deadline")
		require.EqualError(t, h.cause, "finalize of ns/m timed out after 2s: context deadline exceeded")
		r := first()
		requireTimedOut(t, r, "finalize")
		require.ErrorContains(t, r.Err, `finalize "cache.example.com/finalizer": context deadline exceeded`)

		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, []time.Duration{timeout + 5*time.Millisecond}, *m.adds)

		second := m.reconciled()
		gomock.InOrder(
			m.source.EXPECT().Get(key).Return(obj, true, nil),
			m.handler.EXPECT().Finalize(inSpan(), obj).Return(nil),
			m.writer.EXPECT().ApplyFinalizer(alive(), key, obj.UID, fin, false).Return(nil),
		)
		l.Reconcile(t.Context(), key)
		require.Equal(t, ports.OutcomeSuccess, second().Outcome)
		require.Zero(t, l.Pending())
	})
}

func TestLoop_Reconcile_deadline(t *testing.T) {
	obj, gone := object(), deleting(fin)
	justBefore := timeout - time.Millisecond
	for _, tc := range []struct {
		name      string
		finalizer string
		obj       ports.Object
		// calls sets the expected calls of the handler, the writer and the
		// queue, in order; cancel cancels the reconcile's own context.
		calls func(m bubbleMocks, cancel context.CancelCauseFunc) []any
		want  ports.Outcome
		// check checks the report, and when the queue was handed the key.
		check func(t *testing.T, r ports.Report, adds []time.Duration)
	}{
		{
			name: "a Reconcile that returns just before its deadline is a success, its After kept",
			obj:  obj,
			calls: func(m bubbleMocks, _ context.CancelCauseFunc) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), obj).DoAndReturn(func(ctx context.Context, _ ports.Object) (ports.Result, error) {
						time.Sleep(justBefore)
						return ports.Result{After: time.Minute}, ctx.Err()
					}),
					m.added(),
				}
			},
			want: ports.OutcomeSuccess,
			check: func(t *testing.T, r ports.Report, adds []time.Duration) {
				require.Equal(t, justBefore, r.Duration)
				require.Equal(t, []time.Duration{justBefore + time.Minute}, adds, "queued again after its After")
			},
		},
		{
			name:      "a Finalize that returns just before its deadline lets the object go",
			finalizer: fin,
			obj:       gone,
			calls: func(m bubbleMocks, _ context.CancelCauseFunc) []any {
				return []any{
					m.handler.EXPECT().Finalize(inSpan(), gone).DoAndReturn(func(ctx context.Context, _ ports.Object) error {
						time.Sleep(justBefore)
						return ctx.Err()
					}),
					m.writer.EXPECT().ApplyFinalizer(alive(), key, gone.UID, fin, false).Return(nil),
				}
			},
			want: ports.OutcomeSuccess,
		},
		{
			name: "a Reconcile that ignores its context and returns nil past its deadline timed out",
			obj:  obj,
			calls: func(m bubbleMocks, _ context.CancelCauseFunc) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), obj).DoAndReturn(func(context.Context, ports.Object) (ports.Result, error) {
						time.Sleep(timeout + time.Second)
						return ports.Result{}, nil
					}),
					m.added(),
				}
			},
			want: ports.OutcomeTimeout,
			check: func(t *testing.T, r ports.Report, adds []time.Duration) {
				require.Equal(t, timeout+time.Second, r.Duration, "its worker was held until it returned")
				require.EqualError(t, r.Err, "reconcile of ns/m timed out after 2s: context deadline exceeded")
			},
		},
		{
			name: "a timed-out Reconcile whose status apply fails reports both",
			obj:  obj,
			calls: func(m bubbleMocks, _ context.CancelCauseFunc) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), obj).DoAndReturn(func(ctx context.Context, _ ports.Object) (ports.Result, error) {
						<-ctx.Done()
						return ports.Result{Status: []byte(`{"ready":0}`)}, nil
					}),
					m.writer.EXPECT().ApplyStatus(alive(), key, obj.UID, []byte(`{"ready":0}`)).Return(nil, errApply),
					m.added(),
				}
			},
			want: ports.OutcomeTimeout,
			check: func(t *testing.T, r ports.Report, adds []time.Duration) {
				require.ErrorIs(t, r.Err, context.DeadlineExceeded)
				require.ErrorIs(t, r.Err, errApply)
			},
		},
		{
			name: "a Reconcile that panics past its deadline panicked: never retried",
			obj:  obj,
			calls: func(m bubbleMocks, _ context.CancelCauseFunc) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), obj).DoAndReturn(func(ctx context.Context, _ ports.Object) (ports.Result, error) {
						<-ctx.Done()
						panicking("after the deadline")
						return ports.Result{}, nil
					}),
				}
			},
			want: ports.OutcomePanic,
			check: func(t *testing.T, r ports.Report, adds []time.Duration) {
				require.NoError(t, r.Err)
				require.Equal(t, "after the deadline", r.Panic.Value)
			},
		},
		{
			name: "a Reconcile cancelled by a lost Lease before its deadline failed, and didn't time out",
			obj:  obj,
			calls: func(m bubbleMocks, cancel context.CancelCauseFunc) []any {
				return []any{
					m.handler.EXPECT().Reconcile(inSpan(), obj).DoAndReturn(func(ctx context.Context, _ ports.Object) (ports.Result, error) {
						time.AfterFunc(time.Second, func() { cancel(errLost) })
						<-ctx.Done()
						require.ErrorIs(t, context.Cause(ctx), errLost)
						// Still running when the deadline would have passed.
						time.Sleep(timeout)
						return ports.Result{}, ctx.Err()
					}),
					m.added(),
				}
			},
			want: ports.OutcomeError,
			check: func(t *testing.T, r ports.Report, adds []time.Duration) {
				require.ErrorIs(t, r.Err, context.Canceled)
				require.NotErrorIs(t, r.Err, context.DeadlineExceeded)
				require.Zero(t, r.Timeout)
			},
		},
		{
			name:      "a Finalize cancelled by a lost Lease failed, and didn't time out",
			finalizer: fin,
			obj:       gone,
			calls: func(m bubbleMocks, cancel context.CancelCauseFunc) []any {
				return []any{
					m.handler.EXPECT().Finalize(inSpan(), gone).DoAndReturn(func(ctx context.Context, _ ports.Object) error {
						cancel(errLost)
						return context.Cause(ctx)
					}),
					m.added(),
				}
			},
			want: ports.OutcomeError,
			check: func(t *testing.T, r ports.Report, adds []time.Duration) {
				require.ErrorIs(t, r.Err, errLost)
				require.NotErrorIs(t, r.Err, context.DeadlineExceeded)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newBubbleMocks(t)
				l := m.loop(t, tc.finalizer)
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				m.source.EXPECT().Get(key).Return(tc.obj, true, nil)
				got := m.reconciled()
				gomock.InOrder(tc.calls(m, cancel)...)

				l.Reconcile(ctx, key)
				// Long past every timer the pass set.
				time.Sleep(time.Hour)
				synctest.Wait()

				r := got()
				require.Equal(t, tc.want, r.Outcome, "%v", r.Err)
				if tc.want != ports.OutcomeTimeout {
					require.Zero(t, r.Timeout)
				}
				switch r.Outcome {
				case ports.OutcomeError, ports.OutcomeTimeout:
					require.Equal(t, []time.Duration{r.Duration + 5*time.Millisecond}, *m.adds,
						"retried after the first backoff, from the pass's end")
				case ports.OutcomePanic:
					require.Empty(t, *m.adds, "never retried")
				}
				if tc.check != nil {
					tc.check(t, r, *m.adds)
				}
			})
		})
	}
}

func TestLoop_Reconcile_without_a_Timeout_sets_no_deadline(t *testing.T) {
	m := newMocks(t)
	l := m.loop(t, fin, nil)
	for _, obj := range []ports.Object{object(fin), deleting(fin)} {
		m.source.EXPECT().Get(key).Return(obj, true, nil)
		m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx })
		noDeadline := gomock.Cond(func(ctx context.Context) bool { _, ok := ctx.Deadline(); return !ok })
		if obj.Deleting {
			m.handler.EXPECT().Finalize(noDeadline, obj).Return(nil)
			m.writer.EXPECT().ApplyFinalizer(gomock.Any(), key, obj.UID, fin, false).Return(nil)
		} else {
			m.handler.EXPECT().Reconcile(noDeadline, obj).Return(ports.Result{}, nil)
		}
		m.rec.EXPECT().ReconcileEnded(gomock.Any(), key, gomock.Any())
		l.Reconcile(t.Context(), key)
	}
}
