package kubelet

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const readyAfter = 5 * time.Second

// fakeCluster is a fake clientset with a namespace "shop" and a binding
// subresource that binds as the API server does; the fake's own would
// store the Binding in the Pod's place.
func fakeCluster(t *testing.T) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := a.(clienttesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := create.GetObject().(*corev1.Binding)
		obj, err := client.Tracker().Get(pods, b.Namespace, b.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, apierrors.NewConflict(pods.GroupResource(), b.Name, nil)
		}
		pod.Spec.NodeName = b.Target.Name
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
		})
		return true, nil, client.Tracker().Update(pods, pod, b.Namespace)
	})
	return client
}

// startKubelet starts a kubelet on client, with readyAfter and a crash
// loop period of 10s, and stops it when the test ends.
func startKubelet(t *testing.T, client *fake.Clientset) *Kubelet {
	t.Helper()
	k, err := Start(t.Context(), client, Config{ReadyAfter: readyAfter, CrashLoopPeriod: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, k.Stop(context.Background())) })
	return k
}

// createPod creates an unscheduled Pod of one container in shop.
func createPod(t *testing.T, client *fake.Clientset, name string, change ...func(*corev1.Pod)) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: k8stypes.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.29"}}},
	}
	for _, c := range change {
		c(pod)
	}
	_, err := client.CoreV1().Pods("shop").Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}

func getPod(t *testing.T, client *fake.Clientset, name string) *corev1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods("shop").Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return pod
}

func podReady(pod *corev1.Pod) bool { return isReady(pod.Status) }

// statusWrites counts the kubelet's writes of Pod status.
func statusWrites(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		if a.Matches("update", "pods") && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// The Node is registered Ready; a Pod is bound to it, Pending for
// ReadyAfter to the nanosecond, then Running and Ready; and after that
// the kubelet writes nothing more, however long it runs.
func TestKubelet_registers_a_Node_binds_a_Pod_and_runs_it_after_ReadyAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		n, err := client.CoreV1().Nodes().Get(t.Context(), DefaultNodeName, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "true", n.Labels[FakeNodeLabel])
		require.Equal(t, corev1.NodeReady, n.Status.Conditions[3].Type)
		require.Equal(t, corev1.ConditionTrue, n.Status.Conditions[3].Status)

		createPod(t, client, "web-1")
		synctest.Wait()
		pod := getPod(t, client, "web-1")
		require.Equal(t, DefaultNodeName, pod.Spec.NodeName, "bound to the Node")
		require.Equal(t, corev1.PodPending, pod.Status.Phase)
		require.Equal(t, reasonContainerCreating, pod.Status.ContainerStatuses[0].State.Waiting.Reason)

		time.Sleep(readyAfter - time.Nanosecond)
		synctest.Wait()
		require.Equal(t, corev1.PodPending, getPod(t, client, "web-1").Status.Phase, "not a nanosecond early")

		time.Sleep(time.Nanosecond)
		synctest.Wait()
		pod = getPod(t, client, "web-1")
		require.Equal(t, corev1.PodRunning, pod.Status.Phase)
		require.True(t, podReady(pod))
		require.Equal(t, "10.244.0.1", pod.Status.PodIP)

		writes := statusWrites(client)
		require.Equal(t, 2, writes, "Pending, then Running")
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, writes, statusWrites(client), "nothing changed, nothing written")
	})
}

// A crash-looping Pod's restart count grows by one every period; a
// never-ready Pod runs unready; a Pod with a bad annotation never starts,
// and says why.
func TestKubelet_faults_from_the_Pod_s_annotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		annotated := func(v string) func(*corev1.Pod) {
			return func(p *corev1.Pod) { p.Annotations = map[string]string{FaultAnnotation: v} }
		}
		createPod(t, client, "crashing", annotated("CrashLoop"))
		createPod(t, client, "stuck", annotated("NeverReady"))
		createPod(t, client, "typo", annotated("NeverReddy"))

		time.Sleep(readyAfter + 35*time.Second)
		synctest.Wait()
		crashing := getPod(t, client, "crashing")
		require.Equal(t, corev1.PodRunning, crashing.Status.Phase)
		require.False(t, podReady(crashing))
		require.Equal(t, int32(3), crashing.Status.ContainerStatuses[0].RestartCount)
		require.Equal(t, reasonCrashLoopBackOff, crashing.Status.ContainerStatuses[0].State.Waiting.Reason)

		stuck := getPod(t, client, "stuck")
		require.Equal(t, corev1.PodRunning, stuck.Status.Phase)
		require.False(t, podReady(stuck))
		require.NotNil(t, stuck.Status.ContainerStatuses[0].State.Running)

		typo := getPod(t, client, "typo")
		require.Equal(t, corev1.PodPending, typo.Status.Phase)
		waiting := typo.Status.ContainerStatuses[0].State.Waiting
		require.Equal(t, reasonInvalidFault, waiting.Reason)
		require.Contains(t, waiting.Message, `the Pod's annotation kubetest.loam.dev/fault: fault "NeverReddy"`)
	})
}

// Under PartlyReady=1 on the namespace, one Pod of a controller's three
// is ready; when it goes, another takes its place; when the annotation
// goes, all are ready; Pods of another controller count apart.
func TestKubelet_partly_ready_by_the_namespace_s_annotation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		setNamespaceFault(t, client, "PartlyReady=1")
		ownedBy := func(uid string) func(*corev1.Pod) {
			return func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: uid, UID: k8stypes.UID("uid-" + uid), Controller: new(true)}}
			}
		}
		names := []string{"web-a", "web-b", "web-c"}
		for _, name := range names {
			createPod(t, client, name, ownedBy("web"))
		}
		createPod(t, client, "db-a", ownedBy("db"))
		time.Sleep(readyAfter)
		synctest.Wait()
		readyOnes := func() []string {
			var out []string
			for _, name := range names {
				if podReady(getPod(t, client, name)) {
					out = append(out, name)
				}
			}
			return out
		}
		ready := readyOnes()
		require.Len(t, ready, 1, "one of the ReplicaSet's three")
		require.True(t, podReady(getPod(t, client, "db-a")), "another controller's Pod counts apart")

		require.NoError(t, client.CoreV1().Pods("shop").Delete(t.Context(), ready[0], metav1.DeleteOptions{}))
		synctest.Wait()
		names = removeName(names, ready[0])
		require.Len(t, readyOnes(), 1, "another takes the place of the one that went")

		setNamespaceFault(t, client, "")
		synctest.Wait()
		require.Len(t, readyOnes(), 2, "all come alive once the fault goes")

		setNamespaceFault(t, client, "NeverReady")
		synctest.Wait()
		require.Empty(t, readyOnes(), "and they all turn unready with NeverReady")
	})
}

// A ready Pod that ends (an eviction, a test, writes its phase Failed)
// no longer holds a place under PartlyReady: another Pod of its
// controller becomes ready, as its ReplicaSet's replacement would.
func TestKubelet_partly_ready_place_freed_by_a_Pod_that_ended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		setNamespaceFault(t, client, "PartlyReady=1")
		owned := func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "uid-web", Controller: new(true)}}
		}
		createPod(t, client, "web-a", owned)
		time.Sleep(readyAfter)
		synctest.Wait()
		require.True(t, podReady(getPod(t, client, "web-a")))
		createPod(t, client, "web-b", owned)
		time.Sleep(readyAfter)
		synctest.Wait()
		require.False(t, podReady(getPod(t, client, "web-b")), "web-a holds the one place")

		a := getPod(t, client, "web-a")
		a.Status.Phase = corev1.PodFailed
		a.Status.Reason = "Evicted"
		_, err := client.CoreV1().Pods("shop").UpdateStatus(t.Context(), a, metav1.UpdateOptions{})
		require.NoError(t, err)
		synctest.Wait()
		require.True(t, podReady(getPod(t, client, "web-b")), "web-a's place is free once it failed")
	})
}

// A Pod healthy for an hour whose fault becomes CrashLoop starts
// crashing then: its restart count counts the crashes since, not the
// periods since it first ran.
func TestKubelet_crash_loop_counts_from_when_it_began(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		createPod(t, client, "web-1")
		time.Sleep(readyAfter + time.Hour)
		synctest.Wait()
		require.True(t, podReady(getPod(t, client, "web-1")))

		setNamespaceFault(t, client, "CrashLoop")
		synctest.Wait()
		cs := getPod(t, client, "web-1").Status.ContainerStatuses[0]
		require.Equal(t, reasonCrashLoopBackOff, cs.State.Waiting.Reason)
		require.Zero(t, cs.RestartCount, "its first crash")

		time.Sleep(25 * time.Second) // the crash loop period is 10s
		synctest.Wait()
		require.Equal(t, int32(2), getPod(t, client, "web-1").Status.ContainerStatuses[0].RestartCount)
	})
}

// A crash loop that heals and then comes back counts on from the
// restarts it had, one more every period, as a real kubelet's restart
// count does: it doesn't stand still until the new loop's own crashes
// outnumber the old ones.
func TestKubelet_crash_loop_that_comes_back_counts_on(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		createPod(t, client, "web-1")
		time.Sleep(readyAfter)
		synctest.Wait()
		restarts := func() int32 { return getPod(t, client, "web-1").Status.ContainerStatuses[0].RestartCount }

		setNamespaceFault(t, client, "CrashLoop")
		time.Sleep(35 * time.Second) // the crash loop period is 10s
		synctest.Wait()
		require.Equal(t, int32(3), restarts())

		setNamespaceFault(t, client, "")
		time.Sleep(time.Minute)
		synctest.Wait()
		require.True(t, podReady(getPod(t, client, "web-1")))
		require.Equal(t, int32(3), restarts(), "healed, it keeps its count")

		setNamespaceFault(t, client, "CrashLoop")
		synctest.Wait()
		require.Equal(t, int32(3), restarts(), "its first crash since")
		time.Sleep(25 * time.Second)
		synctest.Wait()
		require.Equal(t, int32(5), restarts(), "two more periods, two more restarts")
	})
}

// A Deployment being rolled out has two ReplicaSets: under PartlyReady=1
// one Pod of the two is ready, not one of each, or a Deployment of 2 kept
// partly available would become Available by being rolled.
func TestKubelet_partly_ready_counts_a_Deployment_s_ReplicaSets_together(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		for _, rs := range []string{"web-old", "web-new"} {
			_, err := client.AppsV1().ReplicaSets("shop").Create(t.Context(), &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
				Name: rs, Namespace: "shop", UID: k8stypes.UID("uid-" + rs),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: new(true)}},
			}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		startKubelet(t, client)
		setNamespaceFault(t, client, "PartlyReady=1")
		ownedBy := func(rs string) func(*corev1.Pod) {
			return func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: k8stypes.UID("uid-" + rs), Controller: new(true)}}
			}
		}
		createPod(t, client, "web-old-a", ownedBy("web-old"))
		createPod(t, client, "web-new-a", ownedBy("web-new"))
		time.Sleep(readyAfter)
		synctest.Wait()
		ready := 0
		for _, name := range []string{"web-old-a", "web-new-a"} {
			if podReady(getPod(t, client, name)) {
				ready++
			}
		}
		require.Equal(t, 1, ready, "one of the Deployment's Pods, across its ReplicaSets")
	})
}

// A kubelet started again on a Node whose Pods run takes them up as they
// are, as a real kubelet's restart does: Running and Ready, its IP kept,
// nothing written; not Pending again for ReadyAfter.
func TestKubelet_started_again_keeps_running_Pods_running(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		first, err := Start(t.Context(), client, Config{ReadyAfter: readyAfter})
		require.NoError(t, err)
		createPod(t, client, "web-1")
		time.Sleep(readyAfter)
		synctest.Wait()
		before := getPod(t, client, "web-1")
		require.True(t, podReady(before))
		require.NoError(t, first.Stop(t.Context()))

		time.Sleep(time.Minute)
		writes := statusWrites(client)
		startKubelet(t, client)
		synctest.Wait()
		after := getPod(t, client, "web-1")
		require.Equal(t, corev1.PodRunning, after.Status.Phase)
		require.True(t, podReady(after))
		require.Equal(t, before.Status.PodIP, after.Status.PodIP)
		require.Equal(t, writes, statusWrites(client), "nothing changed, nothing written")
	})
}

func removeName(names []string, name string) []string {
	var out []string
	for _, n := range names {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}

func setNamespaceFault(t *testing.T, client *fake.Clientset, fault string) {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Get(t.Context(), "shop", metav1.GetOptions{})
	require.NoError(t, err)
	ns.Annotations = map[string]string{FaultAnnotation: fault}
	_, err = client.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// A Pod on the Node that is being deleted is deleted at once; a Pod of
// another Node is left alone.
func TestKubelet_deletes_a_terminating_Pod_and_leaves_other_Nodes_alone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		createPod(t, client, "elsewhere", func(p *corev1.Pod) { p.Spec.NodeName = "node-2" })
		createPod(t, client, "going", func(p *corev1.Pod) {
			p.Spec.NodeName = DefaultNodeName
			p.DeletionTimestamp = new(metav1.Now())
			p.Finalizers = nil
		})
		time.Sleep(readyAfter)
		synctest.Wait()
		_, err := client.CoreV1().Pods("shop").Get(t.Context(), "going", metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "deleted: %v", err)
		elsewhere := getPod(t, client, "elsewhere")
		require.Empty(t, elsewhere.Status.Phase, "another Node's Pod is not the kubelet's")
	})
}

// Stop ends every goroutine the kubelet started (synctest.Test would
// fail on one left blocked), and a second Stop is harmless.
func TestKubelet_Stop_ends_it(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		k, err := Start(t.Context(), client, Config{})
		require.NoError(t, err)
		require.Equal(t, DefaultNodeName, k.NodeName())
		require.NoError(t, k.Stop(t.Context()))
		require.NoError(t, k.Stop(t.Context()))
		createPod(t, client, "late")
		synctest.Wait()
		require.Empty(t, getPod(t, client, "late").Spec.NodeName, "a stopped kubelet binds nothing")
	})
}

func TestConfig_reports_every_mistake(t *testing.T) {
	err := Config{ReadyAfter: -time.Second, CrashLoopPeriod: -1}.Check()
	require.ErrorContains(t, err, "ReadyAfter -1s: must not be negative")
	require.ErrorContains(t, err, "CrashLoopPeriod -1ns: must not be negative")
	_, err = Start(t.Context(), fake.NewClientset(), Config{ReadyAfter: -1})
	require.ErrorContains(t, err, "fake kubelet: ReadyAfter")
}

// A Pod with scheduling gates is not bound, as the API server would refuse
// it, until they are removed.
func TestKubelet_binds_a_gated_Pod_once_its_gates_go(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(t)
		startKubelet(t, client)
		createPod(t, client, "gated", func(p *corev1.Pod) {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
		})
		time.Sleep(readyAfter)
		synctest.Wait()
		pod := getPod(t, client, "gated")
		require.Empty(t, pod.Spec.NodeName, "a gated Pod is not bound")

		pod.Spec.SchedulingGates = nil
		_, err := client.CoreV1().Pods("shop").Update(t.Context(), pod, metav1.UpdateOptions{})
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, DefaultNodeName, getPod(t, client, "gated").Spec.NodeName)
	})
}
