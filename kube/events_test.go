package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/loam-dev/loam/ports"
)

// recorded is a ports.Events that keeps what it is handed.
type recorded struct {
	objs    []ports.Object
	records []ports.EventRecord
}

// looseObject is an object of handler_test's loose types.
type looseObject = Object[looseSpec, looseStatus]

func (r *recorded) Record(_ context.Context, obj ports.Object, e ports.EventRecord) {
	r.objs = append(r.objs, obj)
	r.records = append(r.records, e)
}

func TestRecordEvent_checks(t *testing.T) {
	obj := ports.Object{UID: "u1", JSON: []byte(`{"metadata":{"namespace":"ns","name":"m"}}`)}
	reconciling := func(r *recorded) context.Context {
		return withEvents(context.Background(), r, obj, actionReconcile)
	}
	for _, tc := range []struct {
		name   string
		ctx    func(*recorded) context.Context
		typ    EventType
		reason string
		note   string
		want   []string // every line of the error; none when it records
	}{
		{name: "a Warning", ctx: reconciling, typ: Warning, reason: "ConfigMapMissing", note: `configmap "mc-config" not found`},
		{name: "a Normal with digits and no note", ctx: reconciling, typ: Normal, reason: "Scaled2Replicas"},
		{name: "a note of exactly 1 KiB", ctx: reconciling, typ: Normal, reason: "Big", note: strings.Repeat("x", 1024)},
		{name: "a reason of exactly 128 characters", ctx: reconciling, typ: Normal, reason: "R" + strings.Repeat("x", 127)},
		{
			name: "a type neither Normal nor Warning", ctx: reconciling, typ: "Error", reason: "Boom",
			want: []string{`kube: RecordEvent: the type "Error" is neither Normal nor Warning`},
		},
		{
			name: "the zero type", ctx: reconciling, reason: "Boom",
			want: []string{`kube: RecordEvent: the type "" is neither Normal nor Warning`},
		},
		{
			name: "an empty reason", ctx: reconciling, typ: Warning,
			want: []string{"kube: RecordEvent: the reason is empty: want CamelCase, such as ConfigMapMissing"},
		},
		{
			name: "a reason that starts lower-case", ctx: reconciling, typ: Warning, reason: "configMapMissing",
			want: []string{`kube: RecordEvent: the reason "configMapMissing" does not start with an upper-case ASCII letter: want CamelCase, such as ConfigMapMissing`},
		},
		{
			name: "a reason that starts with a digit", ctx: reconciling, typ: Warning, reason: "2Missing",
			want: []string{`kube: RecordEvent: the reason "2Missing" does not start with an upper-case ASCII letter: want CamelCase, such as ConfigMapMissing`},
		},
		{
			name: "a reason with a space", ctx: reconciling, typ: Warning, reason: "ConfigMap Missing",
			want: []string{`kube: RecordEvent: the reason "ConfigMap Missing" has ' ' at byte 9: want only ASCII letters and digits, CamelCase`},
		},
		{
			name: "a reason with a non-ASCII letter", ctx: reconciling, typ: Warning, reason: "Déjà",
			want: []string{`kube: RecordEvent: the reason "Déjà" has 'Ã' at byte 1: want only ASCII letters and digits, CamelCase`},
		},
		{
			name: "a reason too long", ctx: reconciling, typ: Warning, reason: "R" + strings.Repeat("x", 128),
			want: []string{`kube: RecordEvent: the reason "Rxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… is 129 characters long: an Event's reason has at most 128`},
		},
		{
			name: "a note too long is an error, never cut", ctx: reconciling, typ: Warning, reason: "Big", note: strings.Repeat("x", 1025),
			want: []string{`kube: RecordEvent: the note "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… is 1025 bytes long: an Event's note has at most 1024`},
		},
		{
			name: "a context that is not a reconcile's", ctx: func(*recorded) context.Context { return context.Background() }, typ: Warning, reason: "Boom",
			want: []string{"kube: RecordEvent: the context is not one a Controller handed a Reconciler, KindReconciler or Finalize, so there is no object to record the event on"},
		},
		{
			name: "every mistake at once", ctx: func(*recorded) context.Context { return context.Background() },
			typ: "warning", reason: "boom!", note: strings.Repeat("x", 2000),
			want: []string{
				`kube: RecordEvent: the type "warning" is neither Normal nor Warning`,
				`kube: RecordEvent: the reason "boom!" does not start with an upper-case ASCII letter: want CamelCase, such as ConfigMapMissing`,
				`kube: RecordEvent: the note "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… is 2000 bytes long: an Event's note has at most 1024`,
				"kube: RecordEvent: the context is not one a Controller handed a Reconciler, KindReconciler or Finalize, so there is no object to record the event on",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorded{}
			err := RecordEvent(tc.ctx(r), tc.typ, tc.reason, tc.note)
			if tc.want != nil {
				require.EqualError(t, err, strings.Join(tc.want, "\n"))
				require.Empty(t, r.records, "nothing is recorded")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []ports.EventRecord{{Type: string(tc.typ), Reason: tc.reason, Action: "Reconcile", Note: tc.note}}, r.records)
			require.Equal(t, []ports.Object{obj}, r.objs)
		})
	}
}

func TestRecordEvent_records_on_the_object_each_call_was_handed(t *testing.T) {
	r := &recorded{}
	record := func(ctx context.Context, reason string) {
		require.NoError(t, RecordEvent(ctx, Normal, reason, "note"))
	}
	h := handler[looseObject]{
		reconcile: resourceReconcile(ReconcilerFunc[looseSpec, looseStatus](func(ctx context.Context, _ looseObject) (Result[looseStatus], error) {
			record(ctx, "Reconciled")
			return Result[looseStatus]{}, nil
		})),
		finalize: func(ctx context.Context, _ looseObject) error {
			record(ctx, "Finalized")
			return nil
		},
	}.recordingOn(r)
	obj := ports.Object{UID: "u1", JSON: cachedJSON()}
	_, err := h.Reconcile(t.Context(), obj)
	require.NoError(t, err)
	require.NoError(t, h.Finalize(t.Context(), obj))
	require.Equal(t, []ports.EventRecord{
		{Type: "Normal", Reason: "Reconciled", Action: "Reconcile", Note: "note"},
		{Type: "Normal", Reason: "Finalized", Action: "Finalize", Note: "note"},
	}, r.records)
	require.Equal(t, []ports.Object{obj, obj}, r.objs)
}

func TestRecordEvent_without_events_is_no_reconciles(t *testing.T) {
	var handed error
	h := handler[looseObject]{
		reconcile: resourceReconcile(ReconcilerFunc[looseSpec, looseStatus](func(ctx context.Context, _ looseObject) (Result[looseStatus], error) {
			handed = RecordEvent(ctx, Normal, "Reconciled", "")
			return Result[looseStatus]{}, nil
		})),
	}
	_, err := h.Reconcile(t.Context(), ports.Object{JSON: cachedJSON()})
	require.NoError(t, err)
	require.ErrorContains(t, handed, "the context is not one a Controller handed")
}

// The writer's naming of each Event's object is adapters/events'
// (TestObjects_names_the_object); kube hands it the Controller's names,
// records failures on it unless FailureEvents is off, and hands it to its
// handler for RecordEvent.
func TestEventsOf(t *testing.T) {
	tg := target{gvr: schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}, kind: "Memcached", scope: Namespaced}
	settings := DefaultSettings()
	settings.Name = "memcached-controller"
	settings.LeaderElection.Identity = "pod-0"
	tel := telemetry{logger: logr.Discard()}
	h := handler[looseObject]{}
	withEvents := clients{events: fake.NewClientset().EventsV1()}

	none, err := eventsOf(clients{}, settings, tg, tel, h)
	require.NoError(t, err)
	require.Equal(t, controllerEvents{handler: h}, none, "a Client without an events client records none")

	ev, err := eventsOf(withEvents, settings, tg, tel, h)
	require.NoError(t, err)
	require.NotNil(t, ev.writer)
	require.Equal(t, ev.writer, ev.failures)
	require.Equal(t, ev.writer, ev.handler.(handler[looseObject]).events, "RecordEvent records through it")

	off := settings
	off.FailureEvents = FailureEventsOff
	ev, err = eventsOf(withEvents, off, tg, tel, h)
	require.NoError(t, err)
	require.NotNil(t, ev.writer)
	require.Nil(t, ev.failures, "FailureEvents off records no failure")

	_, err = eventsOf(withEvents, Settings{}, tg, tel, h)
	require.ErrorContains(t, err, "kube: the events writer: ")
	require.ErrorContains(t, err, "Controller is empty")
	require.ErrorContains(t, err, "Instance is empty")
}

func TestFailureEvents_settings(t *testing.T) {
	require.Equal(t, FailureEventsOn, DefaultSettings().FailureEvents)
	require.Equal(t, FailureEventsOn, Settings{}.FailureEvents, "the zero value records them")
	off, err := ParseFailureEvents("off")
	require.NoError(t, err)
	require.Equal(t, FailureEventsOff, off)
	require.NoError(t, CheckFailureEvents(off))
	require.EqualError(t, CheckFailureEvents(2), "is FailureEvents(2): want FailureEventsOn or FailureEventsOff")
	_, err = ParseFailureEvents("no")
	require.EqualError(t, err, `"no" is neither on nor off`)
}
