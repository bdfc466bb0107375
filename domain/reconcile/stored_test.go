package reconcile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// The statuses of the tests below: asked is what the Reconciler returns,
// in its fields' order; defaulted is how the API server stores it, with a
// field its schema defaults and its keys sorted.
const (
	asked      = `{"ready":1,"nodes":null}`
	defaulted  = `{"phase":"Pending","ready":1}`
	askedTwo   = `{"ready":2}`
	defaultTwo = `{"phase":"Pending","ready":2}`
	// byOther is defaulted after another field manager set the phase.
	byOther = `{"phase":"Done","ready":1}`
)

// statusPass is one pass over key in a test of the stored statuses: the
// object the cache holds, the status the Reconciler asks for, and, when
// the pass applies it, what the API server answers.
type statusPass struct {
	// status is the cached object's status; gone says the cache holds
	// none.
	status string
	uid    types.UID
	gone   bool
	// deleting says the object is being deleted, with no finalizer of
	// the controller's; refused, that Admit refuses it: another
	// replica's.
	deleting, refused bool
	asked             string
	// apply says the pass applies asked; answer is the status the
	// Writer returns, and err its error.
	apply  bool
	answer []byte
	err    error
	// remembered is how many keys the Loop remembers a status for after
	// the pass.
	remembered int
}

// run runs the passes over key, one after another, on one Loop, and fails
// on an apply that a pass doesn't expect, or one it expects but isn't made.
func runPasses(t *testing.T, passes []statusPass) {
	t.Helper()
	m := newMocks(t)
	var refused bool
	l, err := reconcile.New(reconcile.Config{
		Source: m.source, Writer: m.writer, Queue: m.queue, Handler: m.handler, Recorder: m.rec, Clock: m.clock,
		Admit: func(ctx context.Context, _ ports.Key, _ ports.Object) (context.Context, func(), bool) {
			return ctx, func() {}, !refused
		},
	})
	require.NoError(t, err)
	m.rec.EXPECT().ReconcileStarted(gomock.Any(), key).DoAndReturn(func(ctx context.Context, _ ports.Key) context.Context { return ctx }).AnyTimes()
	m.rec.EXPECT().ReconcileEnded(gomock.Any(), key, gomock.Any()).AnyTimes()
	for i, p := range passes {
		obj := object()
		obj.UID, obj.Status = p.uid, nil
		if obj.UID == "" {
			obj.UID = "uid-1"
		}
		if p.status != "" {
			obj.Status = []byte(p.status)
		}
		obj.Deleting, refused = p.deleting, p.refused
		m.source.EXPECT().Get(key).Return(obj, !p.gone, nil)
		if !p.gone && !p.deleting && !p.refused {
			m.handler.EXPECT().Reconcile(gomock.Any(), obj).Return(ports.Result{Status: []byte(p.asked)}, nil)
		}
		if p.apply {
			m.writer.EXPECT().ApplyStatus(gomock.Any(), key, obj.UID, []byte(p.asked)).Return(p.answer, p.err)
		}
		if p.err != nil {
			m.retried()
		}
		l.Reconcile(t.Context(), key)
		require.Equal(t, p.remembered, l.Remembered(), "pass %d", i)
	}
}

func TestLoop_Reconcile_applies_a_status_the_API_server_stores_otherwise_once(t *testing.T) {
	first := statusPass{asked: asked, apply: true, answer: []byte(defaulted), remembered: 1}
	settled := statusPass{status: defaulted, asked: asked, remembered: 1}
	for _, tt := range []struct {
		name   string
		passes []statusPass
	}{
		{
			name:   "the pass its apply queues, and every pass after it, sends nothing",
			passes: []statusPass{first, settled, settled, settled},
		},
		{
			name:   "the same status sent in another order, or with a null, is the same",
			passes: []statusPass{first, {status: defaulted, asked: `{"nodes":null,"ready":1}`, remembered: 1}},
		},
		{
			name: "a status stored as asked needs no memory",
			passes: []statusPass{
				{asked: askedTwo, apply: true, answer: []byte(` {"ready": 2}`)},
				{status: `{"ready":2}`, asked: askedTwo},
			},
		},
		{
			name: "a status another manager changed is applied again, and settles as the server stores it",
			passes: []statusPass{
				first, settled,
				{status: byOther, asked: asked, apply: true, answer: []byte(byOther), remembered: 1},
				{status: byOther, asked: asked, remembered: 1},
			},
		},
		{
			name: "another status asked for is applied",
			passes: []statusPass{
				first, settled,
				{status: defaulted, asked: askedTwo, apply: true, answer: []byte(defaultTwo), remembered: 1},
				{status: defaultTwo, asked: askedTwo, remembered: 1},
				// Back to the first: the memory is of the latest apply.
				{status: defaultTwo, asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
			},
		},
		{
			name: "an object gone from the cache is forgotten",
			passes: []statusPass{
				first, settled,
				{gone: true},
				{status: defaulted, asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
			},
		},
		{
			name: "an object being deleted is forgotten",
			passes: []statusPass{
				first, settled,
				{status: defaulted, deleting: true},
				{status: defaulted, asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
			},
		},
		{
			name: "an object another replica reconciles is forgotten",
			passes: []statusPass{
				first, settled,
				{status: defaulted, refused: true},
				{status: defaulted, asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
			},
		},
		{
			name:   "a status another manager changed and changed back before a pass is still the stored one",
			passes: []statusPass{first, settled, {status: defaulted, asked: asked, remembered: 1}},
		},
		{
			name: "a status another manager changed, with a pass, and changed back is applied again",
			passes: []statusPass{
				first, settled,
				{status: byOther, asked: asked, apply: true, answer: []byte(byOther), remembered: 1},
				{status: defaulted, asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
				{status: defaulted, asked: asked, remembered: 1},
			},
		},
		{
			name: "an object created again under the same name is another object",
			passes: []statusPass{
				first, settled,
				{status: defaulted, uid: "uid-2", asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
				{status: defaulted, uid: "uid-2", asked: asked, remembered: 1},
			},
		},
		{
			name: "a failed apply forgets, and the next pass applies again",
			passes: []statusPass{
				first, settled,
				{status: byOther, asked: asked, apply: true, err: errApply},
				{status: defaulted, asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
			},
		},
		{
			name: "an answer without a status teaches nothing",
			passes: []statusPass{
				{asked: asked, apply: true},
				{status: defaulted, asked: asked, apply: true, answer: []byte(`not JSON`)},
				{status: defaulted, asked: asked, apply: true, answer: []byte(defaulted), remembered: 1},
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) { runPasses(t, tt.passes) })
	}
}

// A settled object's pass, its status stored otherwise than asked or as
// asked, allocates nothing of the Loop's own to find it has nothing to
// send: no more than a pass that returns no status.
func TestLoop_Reconcile_a_settled_status_allocates_nothing(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's sync.Pool drops the comparison's buffers at random")
	}
	allocs := func(t *testing.T, cached, asked string) float64 {
		t.Helper()
		w := &fakeWriter{}
		var res ports.Result
		if asked != "" {
			res.Status = []byte(asked)
		}
		l, err := reconcile.New(reconcile.Config{
			Source: fakeSource{obj: ports.Object{UID: "uid-1", Status: []byte(cached)}},
			Writer: &answering{fakeWriter: w, answer: []byte(cached)},
			Queue:  fakeQueue{}, Handler: fakeHandler{result: res}, Recorder: fakeRecorder{}, Clock: &fixedClock{},
		})
		require.NoError(t, err)
		ctx := t.Context()
		l.Reconcile(ctx, key) // the first pass, which may apply
		applies := w.applies
		n := testing.AllocsPerRun(100, func() { l.Reconcile(ctx, key) })
		require.Equal(t, applies, w.applies, "a settled object's pass applies nothing")
		return n
	}
	none := allocs(t, defaulted, "")
	for name, cached := range map[string]string{
		"stored as asked":      `{"nodes":null,"ready":1}`,
		"stored otherwise":     defaulted,
		"stored byte for byte": asked,
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, none, allocs(t, cached, asked))
		})
	}
}

// answering is a fakeWriter whose every apply the API server answers with
// answer, or with the status sent when answer is nil.
type answering struct {
	*fakeWriter
	answer []byte
}

func (a *answering) ApplyStatus(ctx context.Context, key ports.Key, uid types.UID, status []byte) ([]byte, error) {
	stored, err := a.fakeWriter.ApplyStatus(ctx, key, uid, status)
	if a.answer != nil {
		return a.answer, err
	}
	return stored, err
}
