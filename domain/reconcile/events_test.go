package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

// eventsLoop returns a Loop on m's ports that records through events, and
// bounds each call with Timeout when timeout is positive.
func eventsLoop(t *testing.T, m mocks, clock ports.Clock, events ports.Events, finalizer string) *reconcile.Loop {
	t.Helper()
	l, err := reconcile.New(reconcile.Config{
		Source: m.source, Writer: m.writer, Queue: m.queue, Handler: m.handler,
		Recorder: m.rec, Clock: clock, Finalizer: finalizer, Events: events, Timeout: timeout,
	})
	require.NoError(t, err)
	return l
}

func TestLoop_Reconcile_records_a_Warning_Event_on_an_object_whose_pass_went_wrong(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes, each character two
	for _, tc := range []struct {
		name      string
		finalizer string
		obj       ports.Object
		// calls sets the handler's and writer's expected calls, and the
		// queue's.
		calls func(m bubbleMocks, o ports.Object)
		want  *ports.EventRecord // nil when no Event is recorded
	}{
		{
			name: "a success records none",
			obj:  object(),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{}, nil)
			},
		},
		{
			name: "a failed Reconcile records ReconcileFailed with its error",
			obj:  object(),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{}, errBoom)
				m.added()
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcileFailed", Action: "Reconcile", Note: "boom"},
		},
		{
			name: "a failed status apply is a failure too",
			obj:  object(),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{Status: []byte(`{"ready":2}`)}, nil)
				m.writer.EXPECT().ApplyStatus(inSpan(), key, o.UID, []byte(`{"ready":2}`)).Return(nil, errApply)
				m.added()
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcileFailed", Action: "Reconcile", Note: "applying status: the server is on fire"},
		},
		{
			name: "a long error is cut to 1 KiB at a character's boundary",
			obj:  object(),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Reconcile(inSpan(), o).Return(ports.Result{}, &textError{long})
				m.added()
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcileFailed", Action: "Reconcile", Note: long[:1024]},
		},
		{
			name: "a timed-out Reconcile records ReconcileFailed with the deadline's error",
			obj:  object(),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Reconcile(inSpan(), o).DoAndReturn(func(ctx context.Context, _ ports.Object) (ports.Result, error) {
					<-ctx.Done()
					return ports.Result{}, nil
				})
				m.added()
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcileFailed", Action: "Reconcile", Note: "reconcile of ns/m timed out after 2s: context deadline exceeded"},
		},
		{
			name: "a panicking Reconcile records ReconcilePanicked with its value",
			obj:  object(),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Reconcile(inSpan(), o).DoAndReturn(func(context.Context, ports.Object) (ports.Result, error) {
					panicking("nil map")
					return ports.Result{}, nil
				})
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcilePanicked", Action: "Reconcile", Note: "panic: nil map"},
		},
		{
			name:      "a failed Finalize records ReconcileFailed for the action Finalize",
			finalizer: fin,
			obj:       deleting(fin),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Finalize(inSpan(), o).Return(errBoom)
				m.added()
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcileFailed", Action: "Finalize", Note: `finalize "cache.example.com/finalizer": boom`},
		},
		{
			name:      "a panicking Finalize records ReconcilePanicked",
			finalizer: fin,
			obj:       deleting(fin),
			calls: func(m bubbleMocks, o ports.Object) {
				m.handler.EXPECT().Finalize(inSpan(), o).DoAndReturn(func(context.Context, ports.Object) error {
					panicking(42)
					return nil
				})
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcilePanicked", Action: "Finalize", Note: "panic: 42"},
		},
		{
			name:      "a failure to add the finalizer records ReconcileFailed",
			finalizer: fin,
			obj:       object(),
			calls: func(m bubbleMocks, o ports.Object) {
				m.writer.EXPECT().ApplyFinalizer(inSpan(), key, o.UID, fin, true).Return(errApply)
				m.added()
			},
			want: &ports.EventRecord{Type: "Warning", Reason: "ReconcileFailed", Action: "Reconcile", Note: `adding finalizer "cache.example.com/finalizer": the server is on fire`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newBubbleMocks(t)
				events := portsmock.NewMockEvents(gomock.NewController(t))
				l := eventsLoop(t, m.mocks, bubbleClock{}, events, tc.finalizer)
				m.source.EXPECT().Get(key).Return(tc.obj, true, nil)
				tc.calls(m, tc.obj)
				ended := m.reconciled()
				var got []ports.EventRecord
				events.EXPECT().Record(inSpan(), tc.obj, gomock.Any()).
					Do(func(_ context.Context, _ ports.Object, r ports.EventRecord) { got = append(got, r) }).
					AnyTimes()

				l.Reconcile(t.Context(), key)
				// A failure's retry comes after its backoff.
				time.Sleep(time.Second)
				synctest.Wait()

				require.NotEqual(t, ports.Outcome(-1), ended().Outcome, "the reconcile ended")
				if tc.want == nil {
					require.Empty(t, got)
					return
				}
				require.Equal(t, []ports.EventRecord{*tc.want}, got)
				require.LessOrEqual(t, len(got[0].Note), reconcile.NoteLimit)
				require.True(t, utf8.ValidString(got[0].Note))
			})
		})
	}
}

func TestLoop_Reconcile_records_no_Event_without_Events_or_an_object(t *testing.T) {
	t.Run("no Events", func(t *testing.T) {
		m := newMocks(t)
		l := m.loop(t, "", nil)
		m.source.EXPECT().Get(key).Return(object(), true, nil)
		m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx })
		m.handler.EXPECT().Reconcile(gomock.Any(), gomock.Any()).Return(ports.Result{}, errBoom)
		m.retried()
		var r ports.Report
		m.rec.EXPECT().ReconcileEnded(gomock.Any(), key, gomock.Any()).Do(func(_ context.Context, _ ports.Key, got ports.Report) { r = got })

		l.Reconcile(t.Context(), key)

		require.Equal(t, ports.OutcomeError, r.Outcome, "the failure is reported all the same")
	})
	t.Run("a failed cache read has no object", func(t *testing.T) {
		m := newMocks(t)
		events := portsmock.NewMockEvents(gomock.NewController(t))
		events.EXPECT().Record(gomock.Any(), gomock.Any(), gomock.Any()).Times(0)
		l := eventsLoop(t, m, m.clock, events, "")
		m.source.EXPECT().Get(key).Return(ports.Object{}, false, errBoom)
		m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx })
		m.retried()
		var r ports.Report
		m.rec.EXPECT().ReconcileEnded(gomock.Any(), key, gomock.Any()).Do(func(_ context.Context, _ ports.Key, got ports.Report) { r = got })

		l.Reconcile(t.Context(), key)

		require.Equal(t, ports.OutcomeError, r.Outcome)
	})
}

// textError is an error whose text is its value.
type textError struct{ text string }

func (e *textError) Error() string { return e.text }
