package explore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

var memcachedsGVR = schema.GroupVersionResource{Group: "explore.loam.dev", Version: "v1", Resource: "memcacheds"}

// parent is a Memcached named name, of the uid uid-name, with conditions, each "Type=Status".
func parent(name string, conditions ...[2]string) *unstructured.Unstructured {
	var cs []any
	for _, c := range conditions {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": "R"})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "explore.loam.dev/v1", "kind": "Memcached",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name},
		"status":   map[string]any{"conditions": cs},
	}}
}

// workload is a Deployment or StatefulSet that owner controls, of
// replicas, with ready of them ready, observed at generation observed of
// 1, and, for a Deployment, its Available condition available ("" for
// none).
func workload(kind, name, owner string, replicas, ready, observed int64, available string) *unstructured.Unstructured {
	status := map[string]any{"readyReplicas": ready, "availableReplicas": ready, "observedGeneration": observed}
	if available != "" {
		status["conditions"] = []any{
			map[string]any{"type": "Progressing", "status": "True"},
			map[string]any{"type": "Available", "status": available, "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."},
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "ns", "generation": int64(1), "ownerReferences": []any{map[string]any{
			"apiVersion": "explore.loam.dev/v1", "kind": "Memcached", "name": owner, "uid": "uid-" + owner, "controller": true,
		}}},
		"spec":   map[string]any{"replicas": replicas},
		"status": status,
	}}
}

func healthExplorer(objects ...runtime.Object) *explorer {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		memcachedsGVR: "MemcachedList", deploymentsGVR: "DeploymentList", statefulSetsGVR: "StatefulSetList",
		replicaSetsGVR: "ReplicaSetList", podsGVR: "PodList",
	}, objects...)
	return &explorer{admin: client, gvr: memcachedsGVR, kind: "Memcached", workloads: true, kubelet: true, healthTypes: defaultHealthConditions, quiet: time.Hour}
}

// TestHealth checks the health oracle: an object that says it serves
// while a Deployment or StatefulSet it controls isn't available is
// reported, with the child's numbers; one that says it doesn't, or whose
// children are available, isn't.
func TestHealth(t *testing.T) {
	e := healthExplorer(
		// Available as soon as its Deployment exists: availableEarly.
		parent("early", [2]string{"Available", "True"}, [2]string{"Applied", "True"}),
		workload("Deployment", "early", "early", 3, 0, 1, "False"),
		// Says so, and its Deployment is.
		parent("fine", [2]string{"Available", "True"}),
		workload("Deployment", "fine", "fine", 3, 3, 1, "True"),
		// Says it isn't, and it isn't.
		parent("honest", [2]string{"Available", "False"}),
		workload("Deployment", "honest", "honest", 3, 1, 1, "False"),
		// Ready, with a StatefulSet of which one of two is ready.
		parent("db", [2]string{"Ready", "True"}),
		workload("StatefulSet", "db", "db", 2, 1, 1, ""),
		// Available with a Deployment its controller hasn't seen yet.
		parent("new", [2]string{"Available", "True"}),
		workload("Deployment", "new", "new", 1, 0, 0, ""),
	)
	found, err := e.health(t.Context(), "ns")
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"early Available Deployment early": "the Memcached early says Available True while the Deployment early it controls isn't available: Available False (MinimumReplicasUnavailable: Deployment does not have minimum availability.); 0 of 3 replicas ready, 0 available, generation 1 observed of 1",
		"db Ready StatefulSet db":          "the Memcached db says Ready True while the StatefulSet db it controls isn't available: 1 of 2 replicas ready, 1 available, generation 1 observed of 1",
		"new Available Deployment new":     "the Memcached new says Available True while the Deployment new it controls isn't available: its controller is still to observe its latest spec; 0 of 1 replicas ready, 0 available, generation 0 observed of 1",
	}, found)

	// A failure that went within Quiet is none; one that stayed is.
	require.NoError(t, e.stillUnhealthy(t.Context(), "ns", map[string]string{"gone": "went"}))
	err = e.stillUnhealthy(t.Context(), "ns", found)
	require.EqualError(t, err, "the health oracle: "+found["db Ready StatefulSet db"]+"; "+found["early Available Deployment early"]+"; "+found["new Available Deployment new"])

	// Its condition types are the Config's.
	e.healthTypes = []string{"Serving"}
	found, err = e.health(t.Context(), "ns")
	require.NoError(t, err)
	require.Empty(t, found)

	// Off, or on a cluster whose Deployments have no status, it judges
	// nothing.
	e.healthTypes = defaultHealthConditions
	e.noHealth = true
	found, err = e.health(t.Context(), "ns")
	require.NoError(t, err)
	require.Empty(t, found)
	e.noHealth, e.workloads = false, false
	found, err = e.health(t.Context(), "ns")
	require.NoError(t, err)
	require.Empty(t, found)
}

func pod(name, phase, ready string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name},
		"status": map[string]any{"phase": phase, "conditions": []any{
			map[string]any{"type": "Ready", "status": ready},
		}},
	}}
}

// TestWorldSettled checks that a step waits for the Pods and workloads: a
// Pending Pod, or a workload its controller is still to observe, hasn't
// settled, nor has anything that changed within Quiet; a Pod's restarts
// are no change.
func TestWorldSettled(t *testing.T) {
	e := healthExplorer(workload("Deployment", "d", "m", 1, 0, 1, "False"), pod("p", "Pending", "False"))
	var w world
	why, err := e.worldSettled(t.Context(), "ns", &w)
	require.NoError(t, err)
	require.Equal(t, "the Pod p is Pending: the kubelet is still to start it", why)

	pods := e.admin.Resource(podsGVR).Namespace("ns")
	running := pod("p", "Running", "False")
	_, err = pods.UpdateStatus(t.Context(), running, metav1.UpdateOptions{})
	require.NoError(t, err)
	why, err = e.worldSettled(t.Context(), "ns", &w)
	require.NoError(t, err)
	require.Regexp(t, `^the Pods and workloads changed \S+ ago$`, why)

	e.quiet = 0
	why, err = e.worldSettled(t.Context(), "ns", &w)
	require.NoError(t, err)
	require.Empty(t, why)

	// A crash-looping Pod's restarts go on: no change.
	e.quiet = time.Hour
	restarted := running.DeepCopy()
	require.NoError(t, unstructured.SetNestedSlice(restarted.Object, []any{map[string]any{"name": "c", "restartCount": int64(3)}}, "status", "containerStatuses"))
	_, err = pods.UpdateStatus(t.Context(), restarted, metav1.UpdateOptions{})
	require.NoError(t, err)
	w.since = time.Now().Add(-2 * time.Hour)
	why, err = e.worldSettled(t.Context(), "ns", &w)
	require.NoError(t, err)
	require.Empty(t, why)

	// Without the fake kubelet, nothing starts a Pending Pod: it is no
	// wait, or every step whose operator makes a Deployment would fail
	// as never settled.
	_, err = pods.UpdateStatus(t.Context(), pod("p", "Pending", "False"), metav1.UpdateOptions{})
	require.NoError(t, err)
	e.kubelet, e.quiet = false, 0
	why, err = e.worldSettled(t.Context(), "ns", &w)
	require.NoError(t, err)
	require.Empty(t, why)
	e.kubelet, e.quiet = true, time.Hour

	// Without the workload controllers there is nothing to wait for.
	e.workloads = false
	_, err = pods.UpdateStatus(t.Context(), pod("p", "Pending", "False"), metav1.UpdateOptions{})
	require.NoError(t, err)
	why, err = e.worldSettled(t.Context(), "ns", &w)
	require.NoError(t, err)
	require.Empty(t, why)
}
