package memcached

import (
	"errors"
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the golden files")

// crdPath is the CRD's YAML, checked in where the kustomization applies it.
const crdPath = "deploy/crd.yaml"

// TestMemcachedCRD is the golden test of the CRD: its YAML is checked in,
// where whatever deploys the controller applies it, and the test keeps it
// true to the types. With -update, it rewrites the file.
func TestMemcachedCRD(t *testing.T) {
	crd, err := Memcached.CRD()
	require.NoError(t, err)
	got, err := yaml.Marshal(crd)
	require.NoError(t, err)

	if *update {
		require.NoError(t, os.WriteFile(crdPath, got, 0o644))
	}
	want, err := os.ReadFile(crdPath)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the CRD changed: run go test -run TestMemcachedCRD -update")
}

// cacheObject is the Memcached default/cache, as a test of the Reconciler
// builds it.
func cacheObject() Object {
	return Object{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default", UID: "cache-uid", Generation: 1},
		Spec:       MemcachedSpec{Size: 2, Image: "memcached:1.6.26-alpine3.19"},
	}
}

func TestReconciler_applies_a_Deployment_the_Memcached_controls(t *testing.T) {
	kc := kubefake.NewClientset()
	m := cacheObject()

	res, err := Reconciler{Kube: kc}.Reconcile(t.Context(), m)
	require.NoError(t, err)

	d, err := kc.AppsV1().Deployments("default").Get(t.Context(), "cache", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, int32(2), *d.Spec.Replicas)
	require.Equal(t, "memcached:1.6.26-alpine3.19", d.Spec.Template.Spec.Containers[0].Image)
	owner := metav1.GetControllerOf(d)
	require.NotNil(t, owner)
	require.Equal(t, m.UID, owner.UID, "the Memcached controls the Deployment")

	require.NotNil(t, res.Status)
	c := meta.FindStatusCondition(res.Status.Conditions, "Available")
	require.NotNil(t, c)
	require.Equal(t, metav1.ConditionUnknown, c.Status, "until the Deployment controller has written its own")
	require.Equal(t, "DeploymentPending", c.Reason)
}

func TestReconciler_reports_a_failed_apply_as_a_condition_and_an_error(t *testing.T) {
	kc := kubefake.NewClientset()
	kc.PrependReactor("patch", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("admission webhook denied the request")
	})

	res, err := Reconciler{Kube: kc}.Reconcile(t.Context(), cacheObject())
	require.ErrorContains(t, err, "admission webhook denied the request", "the error retries the Memcached")
	require.NotNil(t, res.Status, "the status is applied with the error")
	c := meta.FindStatusCondition(res.Status.Conditions, "Available")
	require.NotNil(t, c)
	require.Equal(t, metav1.ConditionUnknown, c.Status)
	require.Equal(t, "ApplyFailed", c.Reason)
	require.Contains(t, c.Message, "admission webhook denied the request")
}

// TestReconciler_copies_the_Deployment_status plays the Deployment
// controller, which the fake doesn't run: it writes the Deployment's status,
// and the next reconcile copies it.
func TestReconciler_copies_the_Deployment_status(t *testing.T) {
	tests := []struct {
		name       string
		condition  appsv1.DeploymentCondition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{
			name:       "available",
			condition:  appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			wantStatus: metav1.ConditionTrue, wantReason: "MinimumReplicasAvailable",
		},
		{
			name:       "unavailable",
			condition:  appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
			wantStatus: metav1.ConditionFalse, wantReason: "MinimumReplicasUnavailable",
		},
		{
			name:       "a condition without a reason keeps the pending one",
			condition:  appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
			wantStatus: metav1.ConditionTrue, wantReason: "DeploymentPending",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			m := cacheObject()
			r := Reconciler{Kube: kc}
			res, err := r.Reconcile(t.Context(), m)
			require.NoError(t, err)
			m.Status = *res.Status

			deployments := kc.AppsV1().Deployments("default")
			d, err := deployments.Get(t.Context(), "cache", metav1.GetOptions{})
			require.NoError(t, err)
			d.Status.ReadyReplicas = 2
			d.Status.Conditions = []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				tt.condition,
			}
			_, err = deployments.UpdateStatus(t.Context(), d, metav1.UpdateOptions{})
			require.NoError(t, err)

			m.Generation = 2
			res, err = r.Reconcile(t.Context(), m)
			require.NoError(t, err)
			require.Equal(t, int32(2), res.Status.ReadyReplicas)
			require.Len(t, res.Status.Conditions, 1, "only Available is copied")
			c := res.Status.Conditions[0]
			require.Equal(t, "Available", c.Type)
			require.Equal(t, tt.wantStatus, c.Status)
			require.Equal(t, tt.wantReason, c.Reason)
			require.Equal(t, tt.condition.Message, c.Message)
			require.Equal(t, int64(2), c.ObservedGeneration, "the condition is about the spec reconciled")
		})
	}
}

// deployment is a Deployment ns/name with a selector, controlled by owner
// when it isn't nil.
func deployment(owner *metav1.OwnerReference) appsv1.Deployment {
	d := appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default", UID: "deployment-uid"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "memcached", "memcached": "cache"}},
		},
	}
	if owner != nil {
		d.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return d
}

func controller(apiVersion, kind string) *metav1.OwnerReference {
	yes := true
	return &metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "cache", UID: "cache-uid", Controller: &yes}
}

func TestBudget(t *testing.T) {
	notController := controller("cache.example.com/v1alpha1", "Memcached")
	notController.Controller = nil
	tests := []struct {
		name       string
		deployment appsv1.Deployment
		wantBudget bool
	}{
		{name: "a Memcached's Deployment", deployment: deployment(controller("cache.example.com/v1alpha1", "Memcached")), wantBudget: true},
		{name: "another version of the group", deployment: deployment(controller("cache.example.com/v1", "Memcached")), wantBudget: true},
		{name: "no owner", deployment: deployment(nil)},
		{name: "an owner that isn't its controller", deployment: deployment(notController)},
		{name: "another kind", deployment: deployment(controller("cache.example.com/v1alpha1", "Redis"))},
		{name: "another group", deployment: deployment(controller("other.example.com/v1alpha1", "Memcached"))},
		{name: "no selector", deployment: func() appsv1.Deployment {
			d := deployment(controller("cache.example.com/v1alpha1", "Memcached"))
			d.Spec.Selector = nil
			return d
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kubefake.NewClientset()
			after, err := Budget{Kube: kc}.Reconcile(t.Context(), tt.deployment)
			require.NoError(t, err)
			require.Zero(t, after)

			pdbs, err := kc.PolicyV1().PodDisruptionBudgets("default").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			if !tt.wantBudget {
				require.Empty(t, pdbs.Items)
				return
			}
			require.Len(t, pdbs.Items, 1)
			pdb := pdbs.Items[0]
			require.Equal(t, "cache", pdb.Name)
			require.Equal(t, int32(1), pdb.Spec.MaxUnavailable.IntVal)
			require.Equal(t, tt.deployment.Spec.Selector.MatchLabels, pdb.Spec.Selector.MatchLabels)
			owner := metav1.GetControllerOf(&pdb)
			require.NotNil(t, owner)
			require.Equal(t, tt.deployment.UID, owner.UID, "the Deployment controls its budget")
		})
	}
}

func TestBudget_returns_a_failed_apply(t *testing.T) {
	kc := kubefake.NewClientset()
	kc.PrependReactor("patch", "poddisruptionbudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	_, err := Budget{Kube: kc}.Reconcile(t.Context(), deployment(controller("cache.example.com/v1alpha1", "Memcached")))
	require.ErrorContains(t, err, "quota exceeded")
}

func TestDefaultDeny(t *testing.T) {
	kc := kubefake.NewClientset()
	ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "team-a-uid"}}

	after, err := DefaultDeny{Kube: kc}.Reconcile(t.Context(), ns)
	require.NoError(t, err)
	require.Zero(t, after)

	p, err := kc.NetworkingV1().NetworkPolicies("team-a").Get(t.Context(), "default-deny", metav1.GetOptions{})
	require.NoError(t, err)
	require.Empty(t, p.Spec.PodSelector.MatchLabels, "it selects every pod")
	require.Empty(t, p.Spec.Ingress, "and allows them no ingress")
	require.Equal(t, "Ingress", string(p.Spec.PolicyTypes[0]))
	owner := metav1.GetControllerOf(p)
	require.NotNil(t, owner)
	require.Equal(t, ns.UID, owner.UID)

	// Run again, it is a no-op.
	_, err = DefaultDeny{Kube: kc}.Reconcile(t.Context(), ns)
	require.NoError(t, err)
}
