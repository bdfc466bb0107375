package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The tests of issue 43: what a real API server makes of a panic, a path
// prefix, a subresource and the App's own namespace.

var (
	webhookPods     = kube.Kind[corev1.Pod]{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Scope: kube.Namespaced}
	deploymentScale = kube.SubResource[autoscalingv1.Scale]{
		GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), Name: "scale",
		Kind: autoscalingv1.SchemeGroupVersion.WithKind("Scale"), Scope: kube.Namespaced,
	}
	podExec = kube.SubResource[corev1.PodExecOptions]{
		GVR: corev1.SchemeGroupVersion.WithResource("pods"), Name: "exec",
		Kind: corev1.SchemeGroupVersion.WithKind("PodExecOptions"), Scope: kube.Namespaced,
	}
)

// A panic is answered 200 with a denial: FailurePolicy Ignore, which
// admits a request whose call failed, admits none of it.
func TestWebhooks_a_panicking_validator_denies_under_Ignore_and_under_Fail(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	panicConfigMap := kube.ValidateKind(configMaps, func(context.Context, kube.Admission[corev1.ConfigMap]) ([]string, error) {
		panic("boom in a ConfigMap")
	}, kube.FailurePolicy(kube.Fail), scopedTo(ns))
	panicSecret := kube.ValidateKind(webhookSecrets, func(context.Context, kube.Admission[corev1.Secret]) ([]string, error) {
		panic("boom in a Secret")
	}, kube.FailurePolicy(kube.Ignore), scopedTo(ns))
	w := openWebhooks(t)
	w.build(t, panicConfigMap, panicSecret)
	w.serve(t)
	register(t, c, ns+"-panic", w.client, panicConfigMap, panicSecret)
	k := adminClients(t, c).kube
	var last error
	wait.For(t, 30*time.Second, func() bool {
		_, last = k.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		return last != nil
	}, "the API server never called the webhook", wait.LastSeen(func() string { return fmt.Sprint(last) }))

	_, err := k.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fail"}}, metav1.CreateOptions{})
	require.ErrorContains(t, err, `admission webhook "validate.v1.configmaps.core" denied the request: the webhook panicked: boom in a ConfigMap`, "Fail")
	_, err = k.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ignore"}}, metav1.CreateOptions{})
	require.ErrorContains(t, err, `admission webhook "validate.v1.secrets.core" denied the request: the webhook panicked: boom in a Secret`, "Ignore")
	_, err = k.CoreV1().Secrets(ns).Get(t.Context(), "ignore", metav1.GetOptions{})
	require.Error(t, err, "nothing was stored")
	require.Len(t, w.tel.ExceptionMessages("webhook panicked"), 3, "each panic is recorded: the probe's and the two creates'")
}

// The configurations put the client's path in front of each Hook's own;
// the Webhooks answer there.
func TestWebhooks_a_prefixed_path_reaches_the_handler(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := gadgets(webhooksGroup(ns))
	crd, err := r.CRD()
	require.NoError(t, err)
	installCRD(t, c, crd)
	var reviews atomic.Int32
	deny := kube.Validate(r, func(_ context.Context, a kube.Admission[widgetAlphaObject]) ([]string, error) {
		reviews.Add(1)
		return nil, fmt.Errorf("the handler saw %s", a.Name)
	}, scopedTo(ns))
	w := openWebhooks(t)
	w.build(t, deny)
	w.serve(t)
	client := w.client
	client.URL += "/hooks/"
	register(t, c, ns+"-prefix", client, deny)

	gadgetsIn := adminClients(t, c).dynamic.Resource(r.GVR()).Namespace(ns)
	var last error
	wait.For(t, 30*time.Second, func() bool {
		_, last = gadgetsIn.Create(t.Context(), gadgetOf(t, r, "probe"), dryRun)
		return last != nil && strings.Contains(last.Error(), "the handler saw probe")
	}, "the review at /hooks/validate/… never reached the handler", wait.LastSeen(func() string { return fmt.Sprint(last) }))
	require.Positive(t, reviews.Load())
}

// gadgetOf is a Gadget of r named name.
func gadgetOf(t *testing.T, r kube.Resource[widgetAlphaSpec, widgetStatus], name string) *unstructured.Unstructured {
	return unstructuredOf(t, widgetAlphaObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: r.Group + "/" + r.Version, Kind: r.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       widgetAlphaSpec{Size: 1},
	})
}

func TestWebhooks_a_subresource_s_hook_gets_its_own_object(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	scale := kube.ValidateSubResource(deploymentScale, func(_ context.Context, a kube.Admission[autoscalingv1.Scale]) ([]string, error) {
		if a.Object.Spec.Replicas > 5 {
			return nil, fmt.Errorf("%s/%s: %d replicas is more than 5", a.SubResource, a.Name, a.Object.Spec.Replicas)
		}
		return nil, nil
	}, kube.Operations(kube.Update), scopedTo(ns))
	exec := kube.ValidateSubResource(podExec, func(_ context.Context, a kube.Admission[corev1.PodExecOptions]) ([]string, error) {
		return nil, fmt.Errorf("%s %s/%s: no %q", a.Operation, a.SubResource, a.Name, a.Object.Command)
	}, kube.Operations(kube.Connect), scopedTo(ns))
	w := openWebhooks(t)
	w.build(t, scale, exec)
	w.serve(t)
	register(t, c, ns+"-subresources", w.client, scale, exec)
	k := adminClients(t, c).kube

	t.Run("deployments/scale", func(t *testing.T) {
		_, err := k.AppsV1().Deployments(ns).Create(t.Context(), deployment("web"), metav1.CreateOptions{})
		require.NoError(t, err)
		scaleTo := func(replicas int32, opts metav1.UpdateOptions) error {
			s, err := k.AppsV1().Deployments(ns).GetScale(t.Context(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			s.Spec.Replicas = replicas
			_, err = k.AppsV1().Deployments(ns).UpdateScale(t.Context(), "web", s, opts)
			return err
		}
		var last error
		wait.For(t, 30*time.Second, func() bool {
			last = scaleTo(10, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return last != nil && strings.Contains(last.Error(), "scale/web: 10 replicas is more than 5")
		}, "the API server never called the scale webhook", wait.LastSeen(func() string { return fmt.Sprint(last) }))
		require.NoError(t, scaleTo(3, metav1.UpdateOptions{}))
	})
	t.Run("pods/exec", func(t *testing.T) {
		var last error
		wait.For(t, 30*time.Second, func() bool {
			last = k.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("web").SubResource("exec").
				Param("command", "ls").Param("stdout", "true").Do(t.Context()).Error()
			return last != nil && strings.Contains(last.Error(), `denied the request: CONNECT exec/web: no ["ls"]`)
		}, "the API server never called the exec webhook", wait.LastSeen(func() string { return fmt.Sprint(last) }))
	})
}

// deployment is a Deployment named name, which no controller runs here.
func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

// A Fail webhook on Pods that the App's own pods need answered would
// keep them from ever starting again: its configuration leaves the App's
// namespace out.
func TestWebhooks_a_Fail_hook_on_Pods_leaves_the_App_s_own_namespace_out(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	own := c.Namespace(t)
	var fromOwn atomic.Int32
	deny := kube.ValidateKind(webhookPods, func(_ context.Context, a kube.Admission[corev1.Pod]) ([]string, error) {
		if a.Namespace == own {
			fromOwn.Add(1)
		}
		return nil, errors.New("no pod here")
	}, kube.FailurePolicy(kube.Fail), kube.NamespaceSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{ns, own}},
	}}))
	w := openWebhooks(t)
	w.build(t, deny)
	w.serve(t)
	client := w.client
	client.OwnNamespace = own
	register(t, c, ns+"-own", client, deny)

	k := adminClients(t, c).kube
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	var last error
	wait.For(t, 30*time.Second, func() bool {
		_, last = k.CoreV1().Pods(ns).Create(t.Context(), pod, dryRun)
		return last != nil && strings.Contains(last.Error(), "no pod here")
	}, "the API server never called the webhook", wait.LastSeen(func() string { return fmt.Sprint(last) }))

	_, err := k.CoreV1().Pods(own).Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err, "the App's own pod is created")
	_, err = k.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	require.ErrorContains(t, err, "no pod here", "a pod elsewhere is still denied")
	require.Zero(t, fromOwn.Load(), "no review of the App's namespace reached the webhook")
}
