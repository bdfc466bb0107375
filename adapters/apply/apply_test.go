package apply_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/ports"
)

var memcacheds = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}

const fin = "cache.example.com/finalizer"

// server answers every patch with answer and records what it was sent.
type server struct {
	client *dynamicfake.FakeDynamicClient
	sent   []k8stesting.PatchActionImpl
	answer func(k8stesting.PatchActionImpl) (*unstructured.Unstructured, error)
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}
	s.answer = func(a k8stesting.PatchActionImpl) (*unstructured.Unstructured, error) {
		var u unstructured.Unstructured
		require.NoError(t, json.Unmarshal(a.GetPatch(), &u.Object))
		return &u, nil
	}
	s.client.PrependReactor("patch", "memcacheds", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchActionImpl)
		s.sent = append(s.sent, p)
		u, err := s.answer(p)
		if err != nil {
			return true, nil, err
		}
		return true, u, nil
	})
	return s
}

func newWriter(t *testing.T, s *server) *apply.Writer {
	t.Helper()
	w, err := apply.New(apply.Config{Client: s.client, GVR: memcacheds, Kind: "Memcached", FieldManager: "memcached-controller"})
	require.NoError(t, err)
	return w
}

var key = ports.Key{Namespace: "ns", Name: "a"}

func TestWriter_ApplyStatus_applies_the_status_subresource_forcing(t *testing.T) {
	s := newServer(t)
	w := newWriter(t, s)
	require.NoError(t, w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{"readyReplicas":3}`)))

	require.Len(t, s.sent, 1)
	p := s.sent[0]
	require.Equal(t, types.ApplyPatchType, p.GetPatchType())
	require.Equal(t, "status", p.GetSubresource())
	require.Equal(t, "ns", p.GetNamespace())
	require.Equal(t, "a", p.GetName())
	opts := p.PatchOptions
	require.Equal(t, "memcached-controller", opts.FieldManager)
	require.NotNil(t, opts.Force)
	require.True(t, *opts.Force)
	require.JSONEq(t, `{
		"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
		"metadata": {"name": "a", "namespace": "ns", "uid": "uid-1"},
		"status": {"readyReplicas": 3}
	}`, string(p.GetPatch()))
}

func TestWriter_ApplyStatus_refuses_what_isn_t_JSON(t *testing.T) {
	s := newServer(t)
	w := newWriter(t, s)
	require.ErrorContains(t, w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{"readyReplicas":`)), "is not JSON")
	require.Empty(t, s.sent)
}

func TestWriter_ApplyFinalizer_adds_it_with_an_apply_of_the_metadata(t *testing.T) {
	s := newServer(t)
	w := newWriter(t, s)
	require.NoError(t, w.ApplyFinalizer(t.Context(), ports.Key{Name: "cluster-wide"}, "uid-1", fin, true))

	require.Len(t, s.sent, 1)
	p := s.sent[0]
	require.Empty(t, p.GetSubresource())
	require.Empty(t, p.GetNamespace())
	require.Equal(t, "memcached-controller", p.PatchOptions.FieldManager)
	require.False(t, *p.PatchOptions.Force)
	require.JSONEq(t, `{
		"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
		"metadata": {"name": "cluster-wide", "uid": "uid-1", "finalizers": ["cache.example.com/finalizer"]}
	}`, string(p.GetPatch()))
}

func TestWriter_ApplyFinalizer_removes_it_with_an_apply_without_it(t *testing.T) {
	s := newServer(t)
	w := newWriter(t, s)
	require.NoError(t, w.ApplyFinalizer(t.Context(), key, "uid-1", fin, false))
	require.JSONEq(t, `{
		"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
		"metadata": {"name": "a", "namespace": "ns", "uid": "uid-1"}
	}`, string(s.sent[0].GetPatch()))
}

// held answers as the API server does when another field manager also set
// the finalizer: it stays, and the managed fields say who holds it.
func held(managers ...metav1.ManagedFieldsEntry) func(k8stesting.PatchActionImpl) (*unstructured.Unstructured, error) {
	return func(k8stesting.PatchActionImpl) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("cache.example.com/v1alpha1")
		u.SetKind("Memcached")
		u.SetName("a")
		u.SetFinalizers([]string{"other.example.com/keep", fin})
		u.SetManagedFields(managers)
		return u, nil
	}
}

func entry(manager string, operation metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: operation, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
}

func TestWriter_ApplyFinalizer_reports_who_else_holds_it(t *testing.T) {
	s := newServer(t)
	w := newWriter(t, s)
	s.answer = held(
		entry("memcached-controller", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:uid":{}}}`),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:finalizers":{".":{},"v:\"cache.example.com/finalizer\"":{}}}}`),
		entry("keeper", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":{"v:\"other.example.com/keep\"":{}}}}`),
		entry("helm", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":{"v:\"cache.example.com/finalizer\"":{}}},"f:spec":{}}`),
		entry("odd", metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:finalizers":["v:\"cache.example.com/finalizer\""]}}`),
	)
	err := w.ApplyFinalizer(t.Context(), key, "uid-1", fin, false)
	var heldErr *ports.FinalizerHeldError
	require.ErrorAs(t, err, &heldErr)
	require.Equal(t, fin, heldErr.Finalizer)
	require.Equal(t, []string{"kubectl-edit", "helm"}, heldErr.Managers)
	require.ErrorContains(t, err, `"kubectl-edit", "helm"`)
}

func TestWriter_ApplyFinalizer_adding_never_reports_it_held(t *testing.T) {
	s := newServer(t)
	w := newWriter(t, s)
	s.answer = held(entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:finalizers":{"v:\"cache.example.com/finalizer\"":{}}}}`))
	require.NoError(t, w.ApplyFinalizer(t.Context(), key, "uid-1", fin, true))
}

func TestWriter_returns_the_API_server_s_error(t *testing.T) {
	s := newServer(t)
	w := newWriter(t, s)
	gone := errors.New(`Operation cannot be fulfilled on memcacheds.cache.example.com "a": uid mismatch`)
	s.answer = func(k8stesting.PatchActionImpl) (*unstructured.Unstructured, error) { return nil, gone }
	require.ErrorIs(t, w.ApplyStatus(t.Context(), key, "uid-1", []byte(`{}`)), gone)
	require.ErrorIs(t, w.ApplyFinalizer(t.Context(), key, "uid-1", fin, false), gone)
	require.ErrorIs(t, w.ApplyFinalizer(t.Context(), key, "uid-1", fin, true), gone)
}

func TestWriter_ApplyFinalizer_removing_from_an_object_that_is_gone_succeeds(t *testing.T) {
	gr := schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}
	noObject := apierrors.NewConflict(gr, "a", errors.New("uid mismatch: the provided object specified uid uid-1, and no existing object was found"))
	fieldConflict := apierrors.NewApplyConflict([]metav1.StatusCause{{
		Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".metadata.finalizers",
	}}, "Apply failed with 1 conflict")
	tests := []struct {
		name    string
		err     error
		present bool
		wantErr bool
	}{
		{"removing, no object with the uid", noObject, false, false},
		{"removing, not found", apierrors.NewNotFound(gr, "a"), false, false},
		{"removing, a field-manager conflict", fieldConflict, false, true},
		{"removing, forbidden", apierrors.NewForbidden(gr, "a", errors.New("no")), false, true},
		{"adding, no object with the uid", noObject, true, true},
		{"adding, not found", apierrors.NewNotFound(gr, "a"), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t)
			w := newWriter(t, s)
			s.answer = func(k8stesting.PatchActionImpl) (*unstructured.Unstructured, error) { return nil, tt.err }
			err := w.ApplyFinalizer(t.Context(), key, "uid-1", fin, tt.present)
			if tt.wantErr {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestNew_reports_every_mistake(t *testing.T) {
	_, err := apply.New(apply.Config{GVR: schema.GroupVersionResource{Group: "cache.example.com"}})
	for _, want := range []string{"Config.Client is nil", "has no Version or no Resource", "Config.Kind is empty", "Config.FieldManager is empty"} {
		require.ErrorContains(t, err, want)
	}
}
