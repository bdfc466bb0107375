package kube

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/loam-dev/loam/ports"
)

type looseSpec struct {
	Size    int32             `json:"size"`
	Labels  map[string]string `json:"labels,omitempty"`
	Tags    []string          `json:"tags,omitempty"`
	Extra   map[string]any    `json:"extra,omitempty"`
	Created time.Time         `json:"created"`
}

type looseStatus struct {
	Ready bool `json:"ready,omitempty"`
}

// cachedJSON is an object as the cache holds it.
func cachedJSON() []byte {
	return []byte(`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached",
		"metadata":{"name":"a","namespace":"ns","uid":"a-uid","generation":3,"labels":{"app":"memcached"}},
		"spec":{"size":2,"labels":{"tier":"cache"},"tags":["x","y"],"extra":{"nested":{"deep":"value"}},"created":"2026-01-02T03:04:05Z"},
		"status":{"ready":true}}`)
}

func TestDecode_hands_out_a_copy_that_shares_nothing_with_the_cache(t *testing.T) {
	doc := cachedJSON()
	want := bytes.Clone(doc)

	obj, err := decode[Object[looseSpec, looseStatus]](doc)
	require.NoError(t, err)
	require.Equal(t, "a", obj.Name)
	require.Equal(t, int64(3), obj.Generation)
	require.Equal(t, "Memcached", obj.Kind)
	require.Equal(t, int32(2), obj.Spec.Size)
	require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), obj.Spec.Created)
	require.True(t, obj.Status.Ready)

	// The end user changes everything they were handed.
	obj.Labels["app"] = "changed"
	obj.Spec.Labels["tier"] = "changed"
	obj.Spec.Tags[0] = "changed"
	obj.Spec.Extra["nested"].(map[string]any)["deep"] = "changed"
	require.Equal(t, want, doc, "the cache is untouched")

	again, err := decode[Object[looseSpec, looseStatus]](doc)
	require.NoError(t, err)
	require.Equal(t, "memcached", again.Labels["app"], "the next decode sees the cache's object")
	require.Equal(t, "cache", again.Spec.Labels["tier"])
}

func TestDecode_names_the_type_it_could_not_decode_into(t *testing.T) {
	_, err := decode[Object[looseSpec, looseStatus]]([]byte(`{"kind":"Memcached","spec":{"size":"two"}}`))
	require.ErrorContains(t, err, "kube: decoding the cached object into a kube.Object[")
}

func TestDecode_decodes_client_go_s_own_structs(t *testing.T) {
	ns, err := decode[corev1.Namespace]([]byte(`{"apiVersion":"v1","kind":"Namespace",
		"metadata":{"name":"team-a","uid":"ns-uid","labels":{"team":"a"}},"status":{"phase":"Active"}}`))
	require.NoError(t, err)
	require.Equal(t, "team-a", ns.Name)
	require.Equal(t, "a", ns.Labels["team"])
	require.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
}

func TestHandler_encodes_the_status_Reconcile_returns(t *testing.T) {
	boom := errors.New("the Deployment can't be applied")
	for _, tc := range []struct {
		name   string
		result Result[looseStatus]
		err    error
		status string // "" for none
	}{
		{name: "a status", result: Result[looseStatus]{Status: &looseStatus{Ready: false}, After: time.Minute}, status: `{}`},
		{name: "a status and an error", result: Result[looseStatus]{Status: &looseStatus{Ready: true}}, err: boom, status: `{"ready":true}`},
		{name: "no status", result: Result[looseStatus]{After: time.Second}},
		{name: "no status and an error", err: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var handed Object[looseSpec, looseStatus]
			h := handler[Object[looseSpec, looseStatus]]{reconcile: resourceReconcile(ReconcilerFunc[looseSpec, looseStatus](
				func(_ context.Context, o Object[looseSpec, looseStatus]) (Result[looseStatus], error) {
					handed = o
					return tc.result, tc.err
				}))}
			res, err := h.Reconcile(t.Context(), ports.Object{JSON: cachedJSON()})
			require.Equal(t, "a", handed.Name)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.result.After, res.After)
			if tc.status == "" {
				require.Nil(t, res.Status, "nil leaves the status alone")
				return
			}
			require.JSONEq(t, tc.status, string(res.Status))
		})
	}
}

// unencodable is a status encoding/json refuses.
type unencodable struct {
	F func() `json:"f"`
}

func TestHandler_reports_a_status_it_can_t_encode(t *testing.T) {
	h := handler[Object[looseSpec, unencodable]]{reconcile: resourceReconcile(ReconcilerFunc[looseSpec, unencodable](
		func(context.Context, Object[looseSpec, unencodable]) (Result[unencodable], error) {
			return Result[unencodable]{Status: &unencodable{F: func() {}}}, nil
		}))}
	res, err := h.Reconcile(t.Context(), ports.Object{JSON: []byte(`{"kind":"Memcached","metadata":{"name":"a"},"spec":{"size":2}}`)})
	require.ErrorContains(t, err, "kube: encoding the status Reconcile returned")
	require.Nil(t, res.Status)
}

func TestHandler_Finalize_hands_the_function_a_copy(t *testing.T) {
	var handed corev1.Namespace
	h := handler[corev1.Namespace]{
		reconcile: kindReconcile(KindReconcilerFunc[corev1.Namespace](func(context.Context, corev1.Namespace) (time.Duration, error) {
			return time.Minute, nil
		})),
		finalize: func(_ context.Context, ns corev1.Namespace) error {
			handed = ns
			return nil
		},
	}
	content := []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`)
	require.NoError(t, h.Finalize(t.Context(), ports.Object{JSON: content}))
	require.Equal(t, "team-a", handed.Name)

	res, err := h.Reconcile(t.Context(), ports.Object{JSON: content})
	require.NoError(t, err)
	require.Equal(t, ports.Result{After: time.Minute}, res, "a Kind applies no status")
}

func TestHandler_Finalize_without_one_fails(t *testing.T) {
	h := handler[corev1.Namespace]{}
	require.ErrorContains(t, h.Finalize(t.Context(), ports.Object{}), "no Finalize")
}
