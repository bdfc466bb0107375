package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

// sharedLabel is the label the shared-informer test's Reconciler sets on
// each Deployment it applies, and sharedSelector selects them by, as the
// Memcached operator's managedBy does.
const (
	sharedLabel    = "app.kubernetes.io/managed-by"
	sharedSelector = sharedLabel + "=shared-e2e"
)

// labelledReconciler applies each Memcached's Deployment, labelled as
// sharedSelector selects, at the Memcached's size.
type labelledReconciler struct{ kube kubernetes.Interface }

func (r labelledReconciler) Reconcile(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
	d, err := r.kube.AppsV1().Deployments(m.Namespace).Apply(ctx,
		memcached.Deployment(m).WithLabels(map[string]string{sharedLabel: "shared-e2e"}),
		metav1.ApplyOptions{FieldManager: "memcached-controller", Force: true})
	if err != nil {
		return kube.Result[memcachedStatus]{}, err
	}
	return kube.Result[memcachedStatus]{Status: &memcachedStatus{ReadyReplicas: d.Status.ReadyReplicas}}, nil
}

// Two Controllers of one Client, the Memcached operator's pair: one owns
// the Deployments sharedSelector selects, the other reconciles those
// same Deployments. The API server serves the App one watch of
// Deployments, and both Controllers react to it.
func TestShared_an_Owns_and_a_Kind_controller_of_the_same_Deployments_share_one_watch(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	wire, conn := startWire(t, c)
	var deployments records[string]
	a := startExperiment(t, conn, scenarioCodec(t), func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		kc, err := kubernetes.NewForConfig(client.Config())
		if err != nil {
			return nil, err
		}
		settings := settingsFor("shared-memcached", ns, "pod-0")
		settings.Namespace = ns
		owner, err := kube.NewController(s, client, settings, r, labelledReconciler{kube: kc},
			kube.Owns(deploymentsGVR, kube.Selector{Labels: sharedSelector}))
		if err != nil {
			return nil, err
		}
		budgetSettings := settingsFor("shared-budget", ns, "pod-0")
		budgetSettings.Namespace = ns
		budgetSettings.LabelSelector = sharedSelector
		budget, err := kube.NewKindController(s, client, budgetSettings, Deployments,
			kube.KindReconcilerFunc[appsv1.Deployment](func(_ context.Context, d appsv1.Deployment) (time.Duration, error) {
				deployments.add(d.Name)
				return 0, nil
			}))
		if err != nil {
			return nil, err
		}
		return []app.Service{owner, budget}, nil
	})
	seen := func() int {
		n := 0
		for _, name := range deployments.from(0) {
			if name == "cache" {
				n++
			}
		}
		return n
	}

	newMemcached(t, admin.dynamic, r, ns, "cache", 2)
	replicas := func(want int32) func() bool {
		return func() bool {
			d, ok := getDeployment(t, admin.kube, ns, "cache")
			return ok && d.Spec.Replicas != nil && *d.Spec.Replicas == want
		}
	}
	wait.For(t, time.Minute, replicas(2), "the Memcached's Deployment is never applied", wait.App(a))
	wait.For(t, time.Minute, func() bool { return seen() >= 1 }, "the Kind controller never reconciles the Deployment", wait.App(a))

	// A kubectl scale of the owned Deployment: the owner's Controller,
	// told through the shared informer, applies the Memcached's size back,
	// and the Kind controller reconciles the change.
	before := seen()
	_, err := admin.kube.AppsV1().Deployments(ns).UpdateScale(t.Context(), "cache",
		&autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}},
		metav1.UpdateOptions{})
	require.NoError(t, err)
	wait.For(t, time.Minute, func() bool { return seen() > before && replicas(2)() }, "the scale is never undone", wait.App(a))

	var watches []wireRequest
	for _, req := range wire.all() {
		if req.isWatch() && strings.HasSuffix(req.path, "/namespaces/"+ns+"/deployments") {
			watches = append(watches, req)
		}
	}
	require.Len(t, watches, 1, "one watch of Deployments for both Controllers: %v", watches)
}
