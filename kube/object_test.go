package kube_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/loam-dev/loam/kube"
)

func TestObject_encodes_as_the_API_server_serves_it(t *testing.T) {
	m := memcached(MemcachedSpec{Size: 2, Image: "memcached:1"}, MemcachedStatus{ReadyReplicas: 1})
	m.UID = "cache-uid"
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"apiVersion": "cache.example.com/v1alpha1",
		"kind": "Memcached",
		"metadata": {"name": "cache", "namespace": "default", "uid": "cache-uid"},
		"spec": {"size": 2, "image": "memcached:1"},
		"status": {"readyReplicas": 1}
	}`, string(raw))

	var back kube.Object[MemcachedSpec, MemcachedStatus]
	require.NoError(t, json.Unmarshal(raw, &back))
	require.Equal(t, m, back)
}

func TestObject_is_a_plain_struct_with_metadata(t *testing.T) {
	var m any = &kube.Object[MemcachedSpec, MemcachedStatus]{}
	_, isObject := m.(metav1.Object)
	require.True(t, isObject, "its metadata's accessors are promoted")
	_, isRuntimeObject := m.(runtime.Object)
	require.False(t, isRuntimeObject, "no DeepCopy, no scheme")
}
