package reconcile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// passHandler keeps what the context of each call says of its pass.
type passHandler struct {
	passes []reconcile.Pass
	marked []bool
}

func (h *passHandler) Reconcile(ctx context.Context, _ ports.Object) (ports.Result, error) {
	p, ok := reconcile.PassOf(ctx)
	h.passes, h.marked = append(h.passes, p), append(h.marked, ok)
	return ports.Result{}, nil
}

func (h *passHandler) Finalize(ctx context.Context, _ ports.Object) error {
	_, err := h.Reconcile(ctx, ports.Object{})
	return err
}

func TestLoop_marks_a_pass_s_context_with_the_controller_and_the_object(t *testing.T) {
	for _, tc := range []struct {
		name      string
		obj       ports.Object
		finalizer string
	}{
		{name: "a reconcile", obj: ports.Object{UID: "uid-1", JSON: []byte(`{"apiVersion":"example.com/v1","kind":"Child"}`)}},
		{
			name:      "a finalize",
			obj:       ports.Object{UID: "uid-1", Deleting: true, Finalizers: []string{"example.com/f"}, JSON: []byte(`{"kind":"Child","apiVersion":"example.com/v1"}`)},
			finalizer: "example.com/f",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &passHandler{}
			l, err := reconcile.New(reconcile.Config{
				Name: "child-controller", Source: fakeSource{obj: tc.obj}, Writer: &fakeWriter{},
				Queue: fakeQueue{}, Handler: h, Recorder: fakeRecorder{}, Clock: &fixedClock{},
				Finalizer: tc.finalizer,
			})
			require.NoError(t, err)
			_, ok := reconcile.PassOf(t.Context())
			require.False(t, ok, "a context no pass made")

			l.Reconcile(t.Context(), key)
			require.Equal(t, []bool{true}, h.marked)
			p := h.passes[0]
			require.Equal(t, "child-controller", p.Controller)
			require.Equal(t, key, p.Key)
			require.Equal(t, tc.obj.UID, p.UID)
			gk, ok := p.GroupKind()
			require.True(t, ok)
			require.Equal(t, schema.GroupKind{Group: "example.com", Kind: "Child"}, gk)
		})
	}
}

func TestPass_GroupKind_reads_the_object_s_apiVersion_and_kind(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		want schema.GroupKind
		ok   bool
	}{
		{name: "a custom resource", json: `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","spec":{}}`, want: schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}, ok: true},
		{name: "the core group", json: `{"apiVersion":"v1","kind":"Namespace"}`, want: schema.GroupKind{Kind: "Namespace"}, ok: true},
		{name: "no kind", json: `{"apiVersion":"v1"}`},
		{name: "no apiVersion", json: `{"kind":"Namespace"}`},
		{name: "an apiVersion that doesn't parse", json: `{"apiVersion":"a/b/c","kind":"Namespace"}`},
		{name: "no JSON", json: ``},
		{name: "bad JSON", json: `{"kind":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &passHandler{}
			l, err := reconcile.New(reconcile.Config{
				Source: fakeSource{obj: ports.Object{UID: "uid-1", JSON: []byte(tc.json)}}, Writer: &fakeWriter{},
				Queue: fakeQueue{}, Handler: h, Recorder: fakeRecorder{}, Clock: &fixedClock{},
			})
			require.NoError(t, err)
			l.Reconcile(t.Context(), key)
			gk, ok := h.passes[0].GroupKind()
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, gk)
		})
	}
}
