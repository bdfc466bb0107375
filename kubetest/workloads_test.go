package kubetest_test

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/util/rand"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/kubelet"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestWorkloadsComeAlive starts a cluster with the workload controllers
// and the fake kubelet, and checks with Kubernetes' own Deployment,
// ReplicaSet and StatefulSet controllers that Pods come alive, or don't,
// as each fault says. Its subtests share the cluster, a namespace each.
func TestWorkloadsComeAlive(t *testing.T) {
	c := kubetest.Start(t, append(logOptions(t.Output()),
		kubetest.WithWorkloadControllers(),
		kubetest.WithFakeKubelet(kubelet.Config{}),
	)...)
	rememberAddress(c)
	cs := clientset(t, c.RESTConfig())

	n, err := cs.CoreV1().Nodes().Get(t.Context(), kubelet.DefaultNodeName, metav1.GetOptions{})
	require.NoError(t, err, "the fake kubelet registered its Node")
	require.Equal(t, "true", n.Labels[kubelet.FakeNodeLabel])

	t.Run("a Deployment of 3 becomes Available with 3 ready replicas", func(t *testing.T) {
		ns := c.Namespace(t)
		createDeployment(t, cs, ns, "web", 3, nil)
		d := waitForDeployment(t, cs, ns, "web", "Available True with 3 ready", func(d *appsv1.Deployment) bool {
			return available(d) == corev1.ConditionTrue && d.Status.ReadyReplicas == 3
		})
		require.Equal(t, int32(3), d.Status.AvailableReplicas)
		require.Equal(t, int32(3), d.Status.UpdatedReplicas)
		for _, p := range pods(t, cs, ns) {
			require.Equal(t, kubelet.DefaultNodeName, p.Spec.NodeName)
			require.Equal(t, corev1.PodRunning, p.Status.Phase)
			require.NotEmpty(t, p.Status.PodIP)
		}

		// Scaling down deletes Pods, and the kubelet lets them go at once.
		scale(t, cs, ns, "web", 1)
		waitForDeployment(t, cs, ns, "web", "scaled down to 1", func(d *appsv1.Deployment) bool {
			return d.Status.Replicas == 1 && d.Status.ReadyReplicas == 1 && len(pods(t, cs, ns)) == 1
		})
	})

	t.Run("a namespace made by hand gets its default ServiceAccount, so its Pods are made", func(t *testing.T) {
		// As kubectl create namespace makes one: no kubetest.Namespace,
		// which makes the ServiceAccount itself. Without the
		// serviceaccount controller, the ReplicaSet's creates were
		// refused: "error looking up service account".
		ns := "by-hand-" + rand.String(6)
		_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		})
		createDeployment(t, cs, ns, "web", 1, nil)
		waitForDeployment(t, cs, ns, "web", "Available True with 1 ready", func(d *appsv1.Deployment) bool {
			return available(d) == corev1.ConditionTrue && d.Status.ReadyReplicas == 1
		})
	})

	t.Run("never ready: unavailable until the fault goes", func(t *testing.T) {
		ns := c.Namespace(t)
		annotateNamespace(t, cs, ns, kubelet.NeverReady.String())
		createDeployment(t, cs, ns, "web", 3, nil)
		// The later event that proves the Pods never became ready: the
		// Deployment controller counted three Pods running, none ready.
		d := waitForDeployment(t, cs, ns, "web", "three Pods, none ready, Available False", func(d *appsv1.Deployment) bool {
			return d.Status.Replicas == 3 && available(d) == corev1.ConditionFalse && runningPods(t, cs, ns) == 3
		})
		require.Zero(t, d.Status.ReadyReplicas)

		annotateNamespace(t, cs, ns, kubelet.Healthy.String())
		waitForDeployment(t, cs, ns, "web", "Available once the fault went", func(d *appsv1.Deployment) bool {
			return available(d) == corev1.ConditionTrue && d.Status.ReadyReplicas == 3
		})
	})

	t.Run("crash loop: restarts grow, never ready", func(t *testing.T) {
		ns := c.Namespace(t)
		createDeployment(t, cs, ns, "web", 2, map[string]string{kubelet.FaultAnnotation: kubelet.CrashLoop.String()})
		wait.For(t, waitFor, func() bool {
			ps := pods(t, cs, ns)
			for _, p := range ps {
				if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount < 2 {
					return false
				}
			}
			return len(ps) == 2
		}, "the Pods never restarted twice")
		for _, p := range pods(t, cs, ns) {
			require.Equal(t, "CrashLoopBackOff", p.Status.ContainerStatuses[0].State.Waiting.Reason)
		}
		d := waitForDeployment(t, cs, ns, "web", "Available False", func(d *appsv1.Deployment) bool {
			return available(d) == corev1.ConditionFalse && d.Status.Replicas == 2
		})
		require.Zero(t, d.Status.ReadyReplicas)
	})

	t.Run("partly ready: 1 of 3", func(t *testing.T) {
		ns := c.Namespace(t)
		annotateNamespace(t, cs, ns, kubelet.PartlyReady(1).String())
		createDeployment(t, cs, ns, "web", 3, nil)
		d := waitForDeployment(t, cs, ns, "web", "1 of 3 ready, Available False", func(d *appsv1.Deployment) bool {
			return d.Status.Replicas == 3 && d.Status.ReadyReplicas == 1 && available(d) == corev1.ConditionFalse && runningPods(t, cs, ns) == 3
		})
		require.Equal(t, int32(1), d.Status.AvailableReplicas)
	})

	t.Run("a StatefulSet's Pods come up in order", func(t *testing.T) {
		ns := c.Namespace(t)
		labels := map[string]string{"app": "db"}
		_, err := cs.AppsV1().StatefulSets(ns).Create(t.Context(), &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    new(int32(2)),
				ServiceName: "db",
				Selector:    &metav1.LabelSelector{MatchLabels: labels},
				Template:    podTemplate(labels, nil),
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		wait.For(t, waitFor, func() bool {
			s, err := cs.AppsV1().StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{})
			require.NoError(t, err)
			return s.Status.ReadyReplicas == 2 && s.Status.AvailableReplicas == 2
		}, "the StatefulSet's two Pods never became ready")
		for _, name := range []string{"db-0", "db-1"} {
			_, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			require.NoError(t, err)
		}
	})
}

func podTemplate(labels, annotations map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.29"}}},
	}
}

// createDeployment creates a Deployment of replicas Pods whose template has
// annotations.
func createDeployment(t *testing.T, cs kubernetes.Interface, ns, name string, replicas int32, annotations map[string]string) {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, annotations),
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func scale(t *testing.T, cs kubernetes.Interface, ns, name string, replicas int32) {
	t.Helper()
	s, err := cs.AppsV1().Deployments(ns).GetScale(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	s.Spec.Replicas = replicas
	_, err = cs.AppsV1().Deployments(ns).UpdateScale(t.Context(), name, s, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// waitForDeployment waits until cond holds of the Deployment, as of its
// generation, and returns it.
func waitForDeployment(t *testing.T, cs kubernetes.Interface, ns, name, what string, cond func(*appsv1.Deployment) bool) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	wait.For(t, waitFor, func() bool {
		var err error
		d, err = cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		return d.Status.ObservedGeneration == d.Generation && cond(d)
	}, fmt.Sprintf("the Deployment %s/%s: never %s", ns, name, what),
		wait.LastSeen(func() string { return fmt.Sprintf("%+v", d.Status) }))
	return d
}

// available is the status of the Deployment's Available condition, ""
// when it has none.
func available(d *appsv1.Deployment) corev1.ConditionStatus {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status
		}
	}
	return ""
}

func pods(t *testing.T, cs kubernetes.Interface, ns string) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	return l.Items
}

// runningPods counts the namespace's Pods the kubelet runs.
func runningPods(t *testing.T, cs kubernetes.Interface, ns string) int {
	t.Helper()
	n := 0
	for _, p := range pods(t, cs, ns) {
		if p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

// annotateNamespace sets the fake kubelet's fault for every Pod of ns.
func annotateNamespace(t *testing.T, cs kubernetes.Interface, ns, fault string) {
	t.Helper()
	n, err := cs.CoreV1().Namespaces().Get(context.WithoutCancel(t.Context()), ns, metav1.GetOptions{})
	require.NoError(t, err)
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[kubelet.FaultAnnotation] = fault
	_, err = cs.CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{})
	require.NoError(t, err)
}
