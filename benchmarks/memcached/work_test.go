package memcached_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/benchmarks/memcached"
)

func TestReady_settles_its_generation_and_is_stable(t *testing.T) {
	require.False(t, memcached.Settled(memcached.Status{}, 1))

	st := memcached.Ready(memcached.Status{}, 3)
	require.True(t, memcached.Settled(st, 3))
	require.False(t, memcached.Settled(st, 4), "a newer generation is not settled")
	require.Equal(t, st, memcached.Ready(st, 3), "a second reconcile returns the status unchanged, so it costs no write")

	notReady := st
	notReady.Conditions = []metav1.Condition{{Type: memcached.ReadyType, Status: metav1.ConditionFalse, ObservedGeneration: 3}}
	require.False(t, memcached.Settled(notReady, 3))
}

func TestConfigMap_is_controlled_by_its_Memcached(t *testing.T) {
	cm := memcached.ConfigMap(memcached.Owner{Namespace: "ns", Name: "m1", UID: "u1"}, memcached.Spec{Size: 2})
	b, err := json.Marshal(cm)
	require.NoError(t, err)
	require.JSONEq(t, `{
		"kind": "ConfigMap", "apiVersion": "v1",
		"metadata": {"name": "m1", "namespace": "ns", "ownerReferences": [{
			"apiVersion": "bench.loam.dev/v1alpha1", "kind": "Memcached", "name": "m1", "uid": "u1",
			"controller": true, "blockOwnerDeletion": true}]},
		"data": {"size": "2"}
	}`, string(b))
}

func TestMemcached_deep_copies(t *testing.T) {
	m := &memcached.Memcached{Status: memcached.Ready(memcached.Status{}, 1)}
	m.Labels = map[string]string{"a": "b"}
	c := m.DeepCopy()
	c.Labels["a"] = "changed"
	c.Status.Conditions[0].Reason = "changed"
	require.Equal(t, "b", m.Labels["a"])
	require.Equal(t, "Reconciled", m.Status.Conditions[0].Reason)

	l := &memcached.MemcachedList{Items: []memcached.Memcached{*m}}
	lc, ok := l.DeepCopyObject().(*memcached.MemcachedList)
	require.True(t, ok)
	lc.Items[0].Labels["a"] = "changed"
	require.Equal(t, "b", l.Items[0].Labels["a"])
}
