package apply_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/ports"
)

var (
	memcacheds  = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}
	memcachedGR = memcacheds.GroupResource()
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

const (
	fin     = "cache.example.com/finalizer"
	manager = "memcached-controller"
)

var key = ports.Key{Namespace: "ns", Name: "a"}

// request is what the API server was sent.
type request struct {
	Method, Path, Query, ContentType, Accept string
	Body                                     string
}

// answer is what the API server answers an apply with.
type answer struct {
	code        int
	contentType string
	body        []byte
	retryAfter  string
}

// apiServer is an API server over TLS and HTTP/2 that answers every
// request with its answer and records what it was sent.
type apiServer struct {
	srv *httptest.Server

	mu   sync.Mutex
	sent []request
	// unrecorded keeps sent empty, for a benchmark's many requests.
	unrecorded bool
	// answer is the answer to every request, after those of first.
	answer answer
	first  []answer
}

func newAPIServer(t testing.TB) *apiServer {
	t.Helper()
	s := &apiServer{answer: ok(object(t, "a", nil, nil))}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		if !s.unrecorded {
			s.sent = append(s.sent, request{
				Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
				ContentType: r.Header.Get("Content-Type"), Accept: r.Header.Get("Accept"), Body: string(body),
			})
		}
		a := s.answer
		if len(s.first) > 0 {
			a, s.first = s.first[0], s.first[1:]
		}
		s.mu.Unlock()
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.code)
		_, _ = w.Write(a.body)
	}))
	s.srv.EnableHTTP2 = true
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

// config is a rest.Config on the server, as kube.Client.Config returns
// one: its own transport, no rate limit.
func (s *apiServer) config() *rest.Config {
	return &rest.Config{Host: s.srv.URL, Transport: s.srv.Client().Transport, QPS: -1}
}

func (s *apiServer) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

func newWriter(t testing.TB, cfg *rest.Config, gvr schema.GroupVersionResource, kind string) *apply.Writer {
	t.Helper()
	client, err := apply.NewClient(cfg)
	require.NoError(t, err)
	w, err := apply.New(apply.Config{Client: client, GVR: gvr, Kind: kind, FieldManager: manager})
	require.NoError(t, err)
	return w
}

// ok answers as the API server does when an apply succeeds: with the
// whole object.
func ok(obj []byte) answer {
	return answer{code: http.StatusOK, contentType: "application/json", body: obj}
}

// refused answers with err's Status, encoded as the API server encodes
// it, and returns the error a client decodes from it.
func refused(t testing.TB, err *apierrors.StatusError) (answer, *apierrors.StatusError) {
	t.Helper()
	s := err.ErrStatus
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, merr := json.Marshal(s)
	require.NoError(t, merr)
	return answer{code: int(s.Code), contentType: "application/json", body: body}, &apierrors.StatusError{ErrStatus: s}
}

// object returns the JSON of a Memcached as the API server returns it
// after an apply, with finalizers and managedFields.
func object(t testing.TB, name string, finalizers []string, managed []metav1.ManagedFieldsEntry) []byte {
	t.Helper()
	o := map[string]any{
		"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
		"metadata": metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: "uid-1", ResourceVersion: "42", Generation: 1,
			Finalizers: finalizers, ManagedFields: managed,
		},
		"spec":   map[string]any{"size": 3},
		"status": map[string]any{"readyReplicas": 3},
	}
	b, err := json.Marshal(o)
	require.NoError(t, err)
	return b
}

func entry(manager string, operation metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: operation, APIVersion: "cache.example.com/v1alpha1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestWriter(t *testing.T) {
	// The API server's refusals, as it sends them.
	uidGone := apierrors.NewConflict(memcachedGR, "a", errors.New("uid mismatch: the provided object specified uid uid-1, and no existing object was found"))
	fieldConflict := apierrors.NewApplyConflict([]metav1.StatusCause{{
		Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl" using cache.example.com/v1alpha1`, Field: ".metadata.finalizers",
	}}, `Apply failed with 1 conflict: conflict with "kubectl" using cache.example.com/v1alpha1: .metadata.finalizers`)
	statusConflict := apierrors.NewApplyConflict([]metav1.StatusCause{{
		Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "other"`, Field: ".status.readyReplicas",
	}}, `Apply failed with 1 conflict: conflict with "other": .status.readyReplicas`)
	notFound := apierrors.NewNotFound(memcachedGR, "a")
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}, "a", field.ErrorList{
		field.Invalid(field.NewPath("status", "readyReplicas"), -1, "should be greater than or equal to 0"),
	})
	forbidden := apierrors.NewForbidden(memcachedGR, "a", errors.New(`User "system:serviceaccount:ns:memcached" cannot patch resource "memcacheds"`))

	const (
		statusPath     = "/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/a/status"
		objectPath     = "/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/a"
		forced         = "fieldManager=memcached-controller&force=true"
		notForced      = "fieldManager=memcached-controller&force=false"
		statusBody     = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"a","namespace":"ns","uid":"uid-1"},"status":{"readyReplicas":3}}`
		addBody        = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"a","namespace":"ns","uid":"uid-1","finalizers":["cache.example.com/finalizer"]}}`
		removeBody     = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"a","namespace":"ns","uid":"uid-1"}}`
		clusterAddBody = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"cw","uid":"uid-1","finalizers":["cache.example.com/finalizer"]}}`
	)
	type call int
	const (
		applyStatus call = iota
		addFinalizer
		removeFinalizer
	)

	tests := []struct {
		name string
		gvr  schema.GroupVersionResource // memcacheds unless set
		kind string
		key  ports.Key // key unless set
		call call
		// answer is the API server's answer; refusal, when set, replaces it
		// with that error's Status.
		answer  answer
		refusal *apierrors.StatusError
		// want is the request sent, its method and headers aside.
		want request
		// The error wanted: with wantRefusal, the refusal, decoded whole
		// from the Status sent, as client-go decodes it; else, without a
		// check, none. check checks the error further.
		wantRefusal bool
		check       func(t *testing.T, err error)
	}{
		{
			name: "a status is applied to the status subresource, forcing", call: applyStatus,
			want: request{Path: statusPath, Query: forced, Body: statusBody},
		},
		{
			name: "a status is applied to a cluster-scoped object", call: applyStatus, key: ports.Key{Name: "cw"},
			want: request{
				Path: "/apis/cache.example.com/v1alpha1/memcacheds/cw/status", Query: forced,
				Body: `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"cw","uid":"uid-1"},"status":{"readyReplicas":3}}`,
			},
		},
		{
			name: "a status of the core group is applied under /api/v1", call: applyStatus, gvr: configMaps, kind: "ConfigMap",
			want: request{
				Path: "/api/v1/namespaces/ns/configmaps/a/status", Query: forced,
				Body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"uid-1"},"status":{"readyReplicas":3}}`,
			},
		},
		{
			name: "a status apply to an object gone is a Conflict", call: applyStatus, refusal: uidGone,
			want: request{Path: statusPath, Query: forced, Body: statusBody}, wantRefusal: true,
			check: func(t *testing.T, err error) { require.True(t, apierrors.IsConflict(err)) },
		},
		{
			name: "a status apply's field-manager conflict keeps its causes", call: applyStatus, refusal: statusConflict,
			want: request{Path: statusPath, Query: forced, Body: statusBody}, wantRefusal: true,
			check: func(t *testing.T, err error) {
				require.True(t, apierrors.IsConflict(err))
				require.True(t, apierrors.HasStatusCause(err, metav1.CauseTypeFieldManagerConflict))
			},
		},
		{
			name: "a status apply to an object not found", call: applyStatus, refusal: notFound,
			want: request{Path: statusPath, Query: forced, Body: statusBody}, wantRefusal: true,
			check: func(t *testing.T, err error) { require.True(t, apierrors.IsNotFound(err)) },
		},
		{
			name: "an invalid status", call: applyStatus, refusal: invalid,
			want: request{Path: statusPath, Query: forced, Body: statusBody}, wantRefusal: true,
			check: func(t *testing.T, err error) {
				require.True(t, apierrors.IsInvalid(err))
				require.EqualError(t, err, `Memcached.cache.example.com "a" is invalid: status.readyReplicas: Invalid value: -1: should be greater than or equal to 0`)
			},
		},
		{
			name: "an answer that is no Status is client-go's generic error", call: applyStatus,
			answer: answer{code: http.StatusServiceUnavailable, contentType: "text/plain", body: []byte("upstream connect error\n")},
			want:   request{Path: statusPath, Query: forced, Body: statusBody},
			check: func(t *testing.T, err error) {
				require.True(t, apierrors.IsServiceUnavailable(err))
				require.EqualError(t, err, "the server is currently unable to handle the request")
				require.True(t, apierrors.HasStatusCause(err, metav1.CauseTypeUnexpectedServerResponse))
			},
		},
		{
			name: "the finalizer is added with an apply of the metadata, not forced", call: addFinalizer,
			want: request{Path: objectPath, Query: notForced, Body: addBody},
		},
		{
			name: "the finalizer is added to a cluster-scoped object", call: addFinalizer, key: ports.Key{Name: "cw"},
			want: request{Path: "/apis/cache.example.com/v1alpha1/memcacheds/cw", Query: notForced, Body: clusterAddBody},
		},
		{
			name: "adding never reports the finalizer held", call: addFinalizer,
			answer: ok(object(t, "a", []string{fin}, []metav1.ManagedFieldsEntry{
				entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:finalizers":{"v:\"cache.example.com/finalizer\"":{}}}}`),
			})),
			want: request{Path: objectPath, Query: notForced, Body: addBody},
		},
		{
			name: "adding to an object gone fails", call: addFinalizer, refusal: uidGone,
			want: request{Path: objectPath, Query: notForced, Body: addBody}, wantRefusal: true,
		},
		{
			name: "adding to an object not found fails", call: addFinalizer, refusal: notFound,
			want: request{Path: objectPath, Query: notForced, Body: addBody}, wantRefusal: true,
		},
		{
			name: "the finalizer is removed with an apply without it", call: removeFinalizer,
			answer: ok(object(t, "a", []string{"other.example.com/keep"}, []metav1.ManagedFieldsEntry{
				entry("keeper", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":{"v:\"other.example.com/keep\"":{}}}}`),
			})),
			want: request{Path: objectPath, Query: notForced, Body: removeBody},
		},
		{
			name: "removing reports who else holds the finalizer", call: removeFinalizer,
			answer: ok(object(t, "a", []string{"other.example.com/keep", fin}, []metav1.ManagedFieldsEntry{
				entry(manager, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:uid":{}}}`),
				entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:finalizers":{".":{},"v:\"cache.example.com/finalizer\"":{}}}}`),
				entry("keeper", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":{"v:\"other.example.com/keep\"":{}}}}`),
				entry("helm", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":{"v:\"cache.example.com/finalizer\"":{}}},"f:spec":{}}`),
				entry("odd", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":["v:\"cache.example.com/finalizer\""]}}`),
				entry("helm", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":{"v:\"cache.example.com/finalizer\"":{}}}}`),
			})),
			want: request{Path: objectPath, Query: notForced, Body: removeBody},
			check: func(t *testing.T, err error) {
				var held *ports.FinalizerHeldError
				require.ErrorAs(t, err, &held)
				require.Equal(t, fin, held.Finalizer)
				require.Equal(t, []string{"kubectl-edit", "helm"}, held.Managers)
				require.ErrorContains(t, err, `"kubectl-edit", "helm"`)
			},
		},
		{
			name: "removing from an object gone succeeds", call: removeFinalizer, refusal: uidGone,
			want: request{Path: objectPath, Query: notForced, Body: removeBody},
		},
		{
			name: "removing from an object not found succeeds", call: removeFinalizer, refusal: notFound,
			want: request{Path: objectPath, Query: notForced, Body: removeBody},
		},
		{
			name: "removing fails on a field-manager conflict", call: removeFinalizer, refusal: fieldConflict,
			want: request{Path: objectPath, Query: notForced, Body: removeBody}, wantRefusal: true,
			check: func(t *testing.T, err error) { require.True(t, apierrors.IsConflict(err)) },
		},
		{
			name: "removing fails when forbidden", call: removeFinalizer, refusal: forbidden,
			want: request{Path: objectPath, Query: notForced, Body: removeBody}, wantRefusal: true,
			check: func(t *testing.T, err error) { require.True(t, apierrors.IsForbidden(err)) },
		},
		{
			name: "removing fails on an answer that isn't an object", call: removeFinalizer,
			answer: ok([]byte(`{"metadata":`)),
			want:   request{Path: objectPath, Query: notForced, Body: removeBody},
			check: func(t *testing.T, err error) {
				require.ErrorContains(t, err, "reading the answer to the apply of ns/a")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAPIServer(t)
			gvr, kind, k := tt.gvr, tt.kind, tt.key
			if gvr.Resource == "" {
				gvr, kind = memcacheds, "Memcached"
			}
			if k.Name == "" {
				k = key
			}
			var wantErr *apierrors.StatusError
			switch {
			case tt.refusal != nil:
				s.answer, wantErr = refused(t, tt.refusal)
			case tt.answer.code != 0:
				s.answer = tt.answer
			}
			w := newWriter(t, s.config(), gvr, kind)

			var err error
			switch tt.call {
			case applyStatus:
				_, err = w.ApplyStatus(t.Context(), k, "uid-1", []byte(`{ "readyReplicas": 3 }`))
			case addFinalizer:
				err = w.ApplyFinalizer(t.Context(), k, "uid-1", fin, true)
			case removeFinalizer:
				err = w.ApplyFinalizer(t.Context(), k, "uid-1", fin, false)
			}

			want := tt.want
			want.Method, want.ContentType, want.Accept = http.MethodPatch, "application/apply-patch+yaml", "application/json"
			require.Equal(t, []request{want}, s.requests())
			switch {
			case tt.wantRefusal:
				var got *apierrors.StatusError
				require.ErrorAs(t, err, &got)
				require.Equal(t, wantErr, got, "the Status the API server sent, whole")
				require.EqualError(t, err, tt.refusal.Error())
			case tt.check == nil:
				require.NoError(t, err)
			}
			if tt.check != nil {
				tt.check(t, err)
			}
		})
	}
}

// TestWriter_errors_are_the_dynamic_client_s holds a Writer's errors to
// client-go's dynamic client's, which it replaced: the same answer makes
// the same error, value for value.
func TestWriter_errors_are_the_dynamic_client_s(t *testing.T) {
	answers := map[string]answer{
		"no Status": {code: http.StatusServiceUnavailable, contentType: "text/plain", body: []byte("upstream connect error")},
		"no body":   {code: http.StatusInternalServerError, contentType: "application/json"},
		"not JSON":  {code: http.StatusBadGateway, contentType: "application/json", body: []byte("<html>")},
		"a Status of success": {code: http.StatusConflict, contentType: "application/json",
			body: []byte(`{"kind":"Status","apiVersion":"v1","status":"Success","code":409}`)},
	}
	for _, e := range []*apierrors.StatusError{
		apierrors.NewConflict(memcachedGR, "a", errors.New("uid mismatch")),
		apierrors.NewNotFound(memcachedGR, "a"),
		apierrors.NewTooManyRequests("slow down", 0),
		apierrors.NewInvalid(schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}, "a", field.ErrorList{field.Required(field.NewPath("status", "nodes"), "")}),
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

			_, got := w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{}`))
			_, want := dyn.Resource(memcacheds).Namespace("ns").Patch(t.Context(), "a", types.ApplyPatchType, []byte(`{}`),
				metav1.PatchOptions{FieldManager: manager, Force: new(true)}, "status")
			require.Error(t, got)
			require.Equal(t, want, got)
			sent := s.requests()
			require.Equal(t, sent[1].Path, sent[0].Path)
			require.Equal(t, sent[1].Query, sent[0].Query)
		})
	}
}

// TestWriter_retries_as_client_go_does: an answer that asks to be retried
// with Retry-After, such as the API server's priority and fairness sends
// when it is busy, is retried, the request sent again whole.
func TestWriter_retries_as_client_go_does(t *testing.T) {
	busy, _ := refused(t, apierrors.NewTooManyRequests("too many requests, please try again later", 0))
	busy.retryAfter = "0"
	for name, call := range map[string]func(*apply.Writer) error{
		"a status": func(w *apply.Writer) error {
			_, err := w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{}`))
			return err
		},
		"adding a finalizer": func(w *apply.Writer) error { return w.ApplyFinalizer(t.Context(), key, "uid-1", fin, true) },
		"removing it":        func(w *apply.Writer) error { return w.ApplyFinalizer(t.Context(), key, "uid-1", fin, false) },
	} {
		t.Run(name, func(t *testing.T) {
			s := newAPIServer(t)
			s.first = []answer{busy, busy}
			w := newWriter(t, s.config(), memcacheds, "Memcached")
			require.NoError(t, call(w))
			sent := s.requests()
			require.Len(t, sent, 3)
			require.Equal(t, sent[0], sent[1])
			require.Equal(t, sent[0], sent[2])
		})
	}
}

func TestWriter_ApplyStatus_refuses_what_isn_t_JSON(t *testing.T) {
	s := newAPIServer(t)
	w := newWriter(t, s.config(), memcacheds, "Memcached")
	for _, status := range []string{`{"readyReplicas":`, ``, `{} {}`} {
		_, err := w.ApplyStatus(t.Context(), key, "uid-1", []byte(status))
		require.ErrorContains(t, err, "is not JSON")
	}
	require.Empty(t, s.requests())
}

func TestWriter_refuses_a_name_that_is_no_path_segment(t *testing.T) {
	s := newAPIServer(t)
	w := newWriter(t, s.config(), memcacheds, "Memcached")
	for k, want := range map[ports.Key]string{
		{Namespace: "ns"}:              "name is required",
		{Namespace: "ns", Name: "a/b"}: `invalid resource name "a/b"`,
		{Namespace: "..", Name: "a"}:   `invalid namespace ".."`,
		{Namespace: "n%s", Name: "a"}:  `invalid namespace "n%s"`,
		{Namespace: "ns", Name: "."}:   `invalid resource name "."`,
	} {
		_, err := w.ApplyStatus(t.Context(), k, "uid-1", []byte(`{}`))
		require.ErrorContains(t, err, want)
		require.ErrorContains(t, w.ApplyFinalizer(t.Context(), k, "uid-1", fin, true), want)
	}
	require.Empty(t, s.requests())
}

func TestNewClient_sends_through_the_Config_s_transport(t *testing.T) {
	s := newAPIServer(t)
	var seen []string
	cfg := s.config()
	next := cfg.Transport
	cfg.Transport = roundTripper(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.Method+" "+r.URL.Path)
		return next.RoundTrip(r)
	})
	cfg.UserAgent = "loam-test"
	w := newWriter(t, cfg, memcacheds, "Memcached")
	_, err := w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{}`))
	require.NoError(t, err)
	require.NoError(t, w.ApplyFinalizer(t.Context(), key, "uid-1", fin, false))
	require.Equal(t, []string{"PATCH /apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/a/status", "PATCH /apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/a"}, seen)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNew_reports_every_mistake(t *testing.T) {
	_, err := apply.New(apply.Config{GVR: schema.GroupVersionResource{Group: "cache.example.com"}})
	for _, want := range []string{"Config.Client is nil", "has no Version or no Resource", "Config.Kind is empty", "Config.FieldManager is empty"} {
		require.ErrorContains(t, err, want)
	}
}

// canned answers every request with the same response, without a
// network: what's left is the client's own cost.
type canned []byte

func (c canned) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   io.NopCloser(bytes.NewReader(c)), ContentLength: int64(len(c)), Request: r,
	}, nil
}

// cutShort answers with a success whose body breaks off after its first
// bytes, as when the connection drops.
type cutShort struct{}

func (cutShort) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/2.0", ProtoMajor: 2,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(io.MultiReader(strings.NewReader(`{"metadata":{"finalizers":[`), iotest.ErrReader(errors.New("stream reset")))),
		Request: r,
	}, nil
}

// TestWriter_an_answer_cut_short: its status code says whether the apply
// was made, so only the apply that reads the object fails.
func TestWriter_an_answer_cut_short(t *testing.T) {
	w := newWriter(t, &rest.Config{Host: "https://api.example.com", Transport: cutShort{}, QPS: -1}, memcacheds, "Memcached")
	stored, err := w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{}`))
	require.NoError(t, err, "the status code said the apply was made")
	require.Nil(t, stored, "no status can be read from an answer cut short")
	require.NoError(t, w.ApplyFinalizer(t.Context(), key, "uid-1", fin, true))
	require.ErrorContains(t, w.ApplyFinalizer(t.Context(), key, "uid-1", fin, false), "reading the answer to the apply of ns/a: stream reset")
}

// TestWriter_ApplyStatus_returns_the_status_the_API_server_stored: the
// answer's status, as the server defaulted and pruned it, not the one sent.
func TestWriter_ApplyStatus_returns_the_status_the_API_server_stored(t *testing.T) {
	obj, err := os.ReadFile("testdata/memcached.json")
	require.NoError(t, err)
	var want struct {
		Status json.RawMessage `json:"status"`
	}
	require.NoError(t, json.Unmarshal(obj, &want))
	w := newWriter(t, &rest.Config{Host: "https://api.example.com", Transport: canned(obj), QPS: -1}, memcacheds, "Memcached")
	stored, err := w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{"readyReplicas":3}`))
	require.NoError(t, err)
	require.JSONEq(t, string(want.Status), string(stored))
}

// BenchmarkApplyStatus is the client's side of one status apply: the
// request built and sent through the Config's transport, the answer (a
// Memcached with three managedFields entries, 2.5 KB) read, and its
// status kept. "in memory" answers without a network, so what it counts
// is the client's alone; "HTTP/2" sends each apply to an httptest server
// over TLS and HTTP/2, whose own allocations, in the same process, are
// counted too.
func BenchmarkApplyStatus(b *testing.B) {
	obj, err := os.ReadFile("testdata/memcached.json")
	require.NoError(b, err)
	status := []byte(`{"conditions":[{"lastTransitionTime":"2026-07-01T10:00:05Z","message":"3 of 3 replicas are ready","observedGeneration":3,"reason":"ReplicasReady","status":"True","type":"Available"}],"readyReplicas":3}`)
	s := newAPIServer(b)
	s.answer, s.unrecorded = ok(obj), true
	for _, bc := range []struct {
		name string
		cfg  *rest.Config
	}{
		{"in memory", &rest.Config{Host: "https://api.example.com", Transport: canned(obj), QPS: -1}},
		{"HTTP/2", s.config()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := newWriter(b, bc.cfg, memcacheds, "Memcached")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.ApplyStatus(b.Context(), key, "uid-1", status); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
