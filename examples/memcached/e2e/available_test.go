package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/kubelet"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestAvailable_follows_the_Pods_the_fake_kubelet_runs runs the operator
// on a cluster of its own with Kubernetes' Deployment and ReplicaSet
// controllers and kubetest's fake kubelet, so a Memcached's Pods come
// alive, or fail as each namespace's fault says, and checks that its
// Available condition is True only while its Deployment has minimum
// availability: never for Pods that are never ready or crash-loop, and
// never for a spec whose Deployment hasn't caught up.
//
// Every status the Memcacheds ever had is watched, and one rule holds of
// each: Available True about a generation is written only with
// readyReplicas equal to that generation's size. That is minimum
// availability for the sizes here, 3 or fewer, whose default
// maxUnavailable of 25% rounds down to 0; from 4 on, the Deployment (and
// so the Memcached) is Available with one replica short.
func TestAvailable_follows_the_Pods_the_fake_kubelet_runs(t *testing.T) {
	c := kubetest.Start(t, kubetest.WithWorkloadControllers(), kubetest.WithFakeKubelet(kubelet.Config{}))
	crd, err := memcached.Memcached.CRD()
	require.NoError(t, err)
	f := readRBAC(t)
	o, kubeconfig := newOperatorOn(t, c, crd, f, f.clusterRole.Rules, f.role.Rules)
	o.start(t, f, kubeconfig)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)

	// scenario is one Memcached in a namespace of its own, whose Pods
	// fail as fault says, and the log of its statuses.
	scenario := func(t *testing.T, fault kubelet.Fault, size int) (ns string, client dynamic.ResourceInterface, log *statusLog) {
		t.Helper()
		ns = c.Namespace(t)
		setFault(t, o, ns, fault)
		client = dyn.Resource(memcached.Memcached.GVR()).Namespace(ns)
		log = watchStatuses(t, client)
		_, err := client.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": memcached.Memcached.Group + "/" + memcached.Memcached.Version,
			"kind":       memcached.Memcached.Kind,
			"metadata":   map[string]any{"name": "cache"},
			"spec":       map[string]any{"size": size},
		}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return ns, client, log
	}

	t.Run("Pods never ready: not Available until they are", func(t *testing.T) {
		ns, client, log := scenario(t, kubelet.NeverReady, 3)
		// The later event that proves no Pod became ready: the operator
		// reported the Deployment's Available False, about this
		// generation, with every Pod running.
		waitForAvailable(t, o, client, metav1.ConditionFalse, 1, func() bool { return runningPods(t, o, ns) == 3 })
		require.Empty(t, log.availableTrue(), "Available before any Pod was ready")

		setFault(t, o, ns, kubelet.Healthy)
		m := waitForAvailable(t, o, client, metav1.ConditionTrue, 1, nil)
		require.Equal(t, int32(3), m.Status.ReadyReplicas)
		log.check(t)
	})

	t.Run("Pods crash-looping: not Available", func(t *testing.T) {
		ns, client, log := scenario(t, kubelet.CrashLoop, 2)
		waitForAvailable(t, o, client, metav1.ConditionFalse, 1, func() bool {
			return restartedPods(t, o, ns) == 2
		})
		require.Empty(t, log.availableTrue(), "Available with every Pod crash-looping")
		log.check(t)
	})

	// Scaled up from 1 to 3, where only the first Pod is ever ready: the
	// Deployment is not available, and the Memcached must not say it is,
	// not even for the moment its Deployment still reports the old
	// size's availability.
	t.Run("scaled up, with the new Pods never ready: not Available", func(t *testing.T) {
		ns, client, log := scenario(t, kubelet.PartlyReady(1), 1)
		waitForAvailable(t, o, client, metav1.ConditionTrue, 1, nil)
		_, err := client.Patch(t.Context(), "cache", types.MergePatchType, []byte(`{"spec":{"size":3}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		m := waitForAvailable(t, o, client, metav1.ConditionFalse, 2, func() bool { return runningPods(t, o, ns) == 3 })
		require.Equal(t, int32(1), m.Status.ReadyReplicas)
		log.check(t)
	})
}

// setFault sets the fake kubelet's fault for every Pod of ns.
func setFault(t *testing.T, o *operator, ns string, fault kubelet.Fault) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kubelet.FaultAnnotation, fault.String())
	_, err := o.kube.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// waitForAvailable waits until the Memcached cache's Available condition
// is status about generation, and then, when it isn't nil, until
// settled holds, and returns the Memcached.
func waitForAvailable(t *testing.T, o *operator, client dynamic.ResourceInterface, status metav1.ConditionStatus, generation int64, settled func() bool) memcached.Object {
	t.Helper()
	var m memcached.Object
	wait.For(t, patience, func() bool {
		m = getMemcached(t, client)
		c := meta.FindStatusCondition(m.Status.Conditions, "Available")
		return c != nil && c.Status == status && c.ObservedGeneration == generation && (settled == nil || settled())
	}, fmt.Sprintf("the Memcached was never Available %s at generation %d", status, generation), o,
		wait.LastSeen(func() string { return fmt.Sprintf("%+v", m.Status) }))
	return m
}

func getMemcached(t *testing.T, client dynamic.ResourceInterface) memcached.Object {
	t.Helper()
	u, err := client.Get(t.Context(), "cache", metav1.GetOptions{})
	require.NoError(t, err)
	return toMemcached(t, u)
}

func toMemcached(t *testing.T, u *unstructured.Unstructured) memcached.Object {
	t.Helper()
	var m memcached.Object
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m))
	return m
}

// podsOf returns the Pods of the namespace.
func podsOf(t *testing.T, o *operator, ns string) []corev1.Pod {
	t.Helper()
	l, err := o.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	return l.Items
}

// runningPods counts the namespace's Pods that the fake kubelet runs.
func runningPods(t *testing.T, o *operator, ns string) int {
	t.Helper()
	n := 0
	for _, p := range podsOf(t, o, ns) {
		if p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

// restartedPods counts the namespace's Pods whose container has
// restarted.
func restartedPods(t *testing.T, o *operator, ns string) int {
	t.Helper()
	n := 0
	for _, p := range podsOf(t, o, ns) {
		if len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].RestartCount > 0 {
			n++
		}
	}
	return n
}

// statusLog is every version of a namespace's Memcacheds that a watch
// saw, from before the first was created.
type statusLog struct {
	mu   sync.Mutex
	seen []memcached.Object
	err  error // what ended the watch early
}

// watchStatuses watches client's Memcacheds until the test ends.
func watchStatuses(t *testing.T, client dynamic.ResourceInterface) *statusLog {
	t.Helper()
	w, err := client.Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	log := &statusLog{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range w.ResultChan() {
			u, ok := e.Object.(*unstructured.Unstructured)
			if !ok {
				log.mu.Lock()
				log.err = fmt.Errorf("the watch ended with %v %v", e.Type, e.Object)
				log.mu.Unlock()
				continue
			}
			var m memcached.Object
			err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m)
			log.mu.Lock()
			if err != nil {
				log.err = err
			} else {
				log.seen = append(log.seen, m)
			}
			log.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		<-done
	})
	return log
}

// availableTrue returns every version seen with Available True.
func (l *statusLog) availableTrue() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, m := range l.seen {
		if c := meta.FindStatusCondition(m.Status.Conditions, "Available"); c != nil && c.Status == metav1.ConditionTrue {
			out = append(out, describe(m))
		}
	}
	return out
}

// check fails t if a version was Available True about its own
// generation without as many ready replicas as its size, or if the watch
// broke. (A version whose condition is about an earlier generation is
// one the operator hasn't reconciled yet.)
func (l *statusLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NoError(t, l.err)
	require.NotEmpty(t, l.seen)
	var wrong []string
	for _, m := range l.seen {
		c := meta.FindStatusCondition(m.Status.Conditions, "Available")
		if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == m.Generation && m.Status.ReadyReplicas != m.Spec.Size {
			wrong = append(wrong, describe(m))
		}
	}
	require.Empty(t, wrong, "Available True without its size's replicas ready, in:\n%s", strings.Join(wrong, "\n"))
}

func describe(m memcached.Object) string {
	c := meta.FindStatusCondition(m.Status.Conditions, "Available")
	return fmt.Sprintf("generation %d, size %d, readyReplicas %d, Available %+v", m.Generation, m.Spec.Size, m.Status.ReadyReplicas, c)
}
