package apply_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/ports"
)

// objectDoc is an object's apply, as kube's Resource.Apply writes one.
const objectDoc = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"a","namespace":"ns"},"spec":{"size":0}}`

func TestWriter_ApplyObject_sends_the_object_as_it_is_forcing_and_returns_the_answer(t *testing.T) {
	for _, tt := range []struct {
		key      ports.Key
		wantPath string
	}{
		{key, "/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/a"},
		{ports.Key{Name: "cw"}, "/apis/cache.example.com/v1alpha1/memcacheds/cw"},
	} {
		t.Run(tt.key.String(), func(t *testing.T) {
			s := newAPIServer(t)
			stored := object(t, "a", nil, []metav1.ManagedFieldsEntry{entry(manager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:size":{}}}`)})
			s.answer = ok(stored)
			w := newWriter(t, s.config(), memcacheds, "Memcached")

			got, err := w.ApplyObject(t.Context(), tt.key, []byte(objectDoc))
			require.NoError(t, err)
			require.JSONEq(t, string(stored), string(got), "the whole answer")
			// To the object, not a subresource, forcing, as an apply.
			require.Equal(t, []request{{
				Method: http.MethodPatch, Path: tt.wantPath, Query: "fieldManager=memcached-controller&force=true",
				ContentType: "application/apply-patch+yaml", Accept: "application/json", Body: objectDoc,
			}}, s.requests())
		})
	}
}

// TestWriter_ApplyObject_errors_are_the_dynamic_client_s: the same answer
// makes the same error as client-go's dynamic client's Apply, value for
// value, the Status the API server sent decoded whole.
func TestWriter_ApplyObject_errors_are_the_dynamic_client_s(t *testing.T) {
	answers := map[string]answer{
		"no Status": {code: http.StatusServiceUnavailable, contentType: "text/plain", body: []byte("upstream connect error")},
		"not JSON":  {code: http.StatusBadGateway, contentType: "application/json", body: []byte("<html>")},
	}
	for _, e := range []*apierrors.StatusError{
		apierrors.NewApplyConflict([]metav1.StatusCause{{
			Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".spec.size",
		}}, `Apply failed with 1 conflict: conflict with "kubectl": .spec.size`),
		apierrors.NewForbidden(memcachedGR, "a", errors.New(`User "system:serviceaccount:ns:memcached" cannot patch resource "memcacheds"`)),
		apierrors.NewTooManyRequests("slow down", 0),
	} {
		answers[string(e.ErrStatus.Reason)], _ = refused(t, e)
	}
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			s := newAPIServer(t)
			s.answer = a
			w := newWriter(t, s.config(), memcacheds, "Memcached")
			dyn, err := dynamic.NewForConfig(s.config())
			require.NoError(t, err)

			_, got := w.ApplyObject(t.Context(), key, []byte(objectDoc))
			_, want := dyn.Resource(memcacheds).Namespace("ns").Patch(t.Context(), "a", types.ApplyPatchType, []byte(objectDoc),
				metav1.PatchOptions{FieldManager: manager, Force: new(true)})
			require.Error(t, got)
			require.Equal(t, want, got)
			sent := s.requests()
			require.Equal(t, sent[1].Path, sent[0].Path)
			require.Equal(t, sent[1].Query, sent[0].Query)
		})
	}
}

func TestWriter_ApplyObject_retries_as_client_go_does(t *testing.T) {
	busy, _ := refused(t, apierrors.NewTooManyRequests("too many requests, please try again later", 0))
	busy.retryAfter = "0"
	s := newAPIServer(t)
	s.first = []answer{busy, busy}
	w := newWriter(t, s.config(), memcacheds, "Memcached")
	_, err := w.ApplyObject(t.Context(), key, []byte(objectDoc))
	require.NoError(t, err)
	sent := s.requests()
	require.Len(t, sent, 3)
	require.Equal(t, sent[0], sent[1])
	require.Equal(t, sent[0], sent[2])
}

func TestWriter_ApplyObject_refuses_what_it_can_t_send(t *testing.T) {
	s := newAPIServer(t)
	w := newWriter(t, s.config(), memcacheds, "Memcached")
	_, err := w.ApplyObject(t.Context(), key, []byte(`{"spec":`))
	require.ErrorContains(t, err, "is not JSON")
	_, err = w.ApplyObject(t.Context(), ports.Key{Namespace: "ns", Name: "a/b"}, []byte(`{}`))
	require.ErrorContains(t, err, `invalid resource name "a/b"`)
	require.Empty(t, s.requests())
}

// TestWriter_ApplyObject_returns_an_answer_of_its_own: the answer is read
// into a buffer kept for the next apply, and the caller's copy is left
// alone by it.
func TestWriter_ApplyObject_returns_an_answer_of_its_own(t *testing.T) {
	s := newAPIServer(t)
	first := object(t, "a", nil, nil)
	s.first = []answer{ok(first)}
	s.answer = ok(object(t, "b", []string{fin}, nil))
	w := newWriter(t, s.config(), memcacheds, "Memcached")
	got, err := w.ApplyObject(t.Context(), key, []byte(objectDoc))
	require.NoError(t, err)
	again, err := w.ApplyObject(t.Context(), key, []byte(objectDoc))
	require.NoError(t, err)
	require.Equal(t, string(first), string(got))
	require.NotEqual(t, string(got), string(again))
}

// TestWriter_ApplyObject_an_answer_cut_short fails naming the object: the
// apply was made, but there is no object to return.
func TestWriter_ApplyObject_an_answer_cut_short(t *testing.T) {
	w := newWriter(t, &rest.Config{Host: "https://api.example.com", Transport: cutShort{}, QPS: -1}, memcacheds, "Memcached")
	_, err := w.ApplyObject(t.Context(), key, []byte(objectDoc))
	require.EqualError(t, err, "reading the answer to the apply of ns/a: stream reset")
}
