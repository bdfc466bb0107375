package kubetest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/kubelet"
	"github.com/loam-dev/loam/kubetest/wait"
)

// waitFor bounds how long a test waits for something the cluster does
// asynchronously. It is a ceiling against hanging, not a timing assertion.
const waitFor = 30 * time.Second

func clientset(t *testing.T, cfg *rest.Config) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

func TestCRDBecomesEstablishedAndValidatesBySchema(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	client := widgets(t, c, ns)

	crds, err := apiextensionsclient.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, widgetCRD().Name, metav1.GetOptions{})
	require.NoError(t, err)
	established := false
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established {
			established = cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	assert.True(t, established, "InstallCRDs returned before the CRD was Established: %+v", crd.Status.Conditions)

	createWidget(ctx, t, client, widget(ns, "fine", map[string]any{"size": int64(3)}))

	tests := []struct {
		name  string
		spec  map[string]any
		field string
	}{
		{"below the schema's minimum", map[string]any{"size": int64(0)}, "spec.size"},
		{"above the schema's maximum", map[string]any{"size": int64(11)}, "spec.size"},
		{"wrong type", map[string]any{"size": "three"}, "spec.size"},
		{"required field missing", map[string]any{"color": "blue"}, "spec.size"},
		{"CEL rule broken", map[string]any{"size": int64(7), "color": "red"}, "a red widget has at most 5 parts"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Create(ctx, widget(ns, "bad-"+string(rune('a'+i)), tt.spec), metav1.CreateOptions{})
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			assert.Contains(t, err.Error(), tt.field)
		})
	}
}

func TestServerSideApplyOfDeploymentOwnedByCustomObject(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	owner := createWidget(ctx, t, widgets(t, c, ns), widget(ns, "owner", map[string]any{"size": int64(2)}))
	cs := clientset(t, c.RESTConfig())

	labels := map[string]string{"app": "owned"}
	deployment := appsv1ac.Deployment("owned", ns).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion("kubetest.loam.dev/v1").WithKind("Widget").
			WithName(owner.GetName()).WithUID(owner.GetUID()).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(2).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(
					corev1ac.Container().WithName("app").WithImage("registry.example/app:1")))))
	applied, err := cs.AppsV1().Deployments(ns).Apply(ctx, deployment, metav1.ApplyOptions{FieldManager: "widget-controller", Force: true})
	require.NoError(t, err)

	require.Len(t, applied.OwnerReferences, 1)
	ref := applied.OwnerReferences[0]
	assert.Equal(t, owner.GetUID(), ref.UID)
	assert.True(t, ptr.Deref(ref.Controller, false))
	assert.Equal(t, int32(2), ptr.Deref(applied.Spec.Replicas, 0))
	assert.True(t, managedBy(applied.ManagedFields, "widget-controller", metav1.ManagedFieldsOperationApply, ""),
		"managedFields: %+v", applied.ManagedFields)

	// Applying the same configuration again changes nothing.
	again, err := cs.AppsV1().Deployments(ns).Apply(ctx, deployment, metav1.ApplyOptions{FieldManager: "widget-controller", Force: true})
	require.NoError(t, err)
	assert.Equal(t, applied.ResourceVersion, again.ResourceVersion)
}

func TestServerSideApplyOfStatusSubresource(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	client := widgets(t, c, ns)
	created := createWidget(ctx, t, client, widget(ns, "status", map[string]any{"size": int64(4)}))

	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubetest.loam.dev/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"namespace": ns, "name": "status"},
		"status":     map[string]any{"ready": true, "observedGeneration": created.GetGeneration()},
	}}
	applied, err := client.ApplyStatus(ctx, "status", status, metav1.ApplyOptions{FieldManager: "widget-controller", Force: true})
	require.NoError(t, err)
	ready, _, _ := unstructured.NestedBool(applied.Object, "status", "ready")
	assert.True(t, ready)
	assert.Equal(t, created.GetGeneration(), applied.GetGeneration(), "a status write must not bump the generation")
	size, _, _ := unstructured.NestedInt64(applied.Object, "spec", "size")
	assert.Equal(t, int64(4), size, "a status write must leave the spec alone")
	assert.True(t, managedBy(applied.GetManagedFields(), "widget-controller", metav1.ManagedFieldsOperationApply, "status"))

	// With a status subresource, status sent to the main resource is
	// dropped, as Kubernetes does.
	mainApply := widget(ns, "status", map[string]any{"size": int64(5)})
	mainApply.Object["status"] = map[string]any{"ready": false}
	afterMain, err := client.Apply(ctx, "status", mainApply, metav1.ApplyOptions{FieldManager: "someone-else", Force: true})
	require.NoError(t, err)
	ready, _, _ = unstructured.NestedBool(afterMain.Object, "status", "ready")
	assert.True(t, ready, "status changed through the main resource")
	assert.Equal(t, created.GetGeneration()+1, afterMain.GetGeneration(), "a spec change bumps the generation")
}

func TestFieldManagerConflict(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	cs := clientset(t, c.RESTConfig())
	apply := func(manager string, replicas int, force bool) (*corev1.ConfigMap, error) {
		cm := corev1ac.ConfigMap("contested", ns).WithData(map[string]string{"replicas": strconv.Itoa(replicas)})
		return cs.CoreV1().ConfigMaps(ns).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: manager, Force: force})
	}

	_, err := apply("first", 2, false)
	require.NoError(t, err)

	_, err = apply("second", 3, false)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "want 409 Conflict, got %v", err)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	details := status.Status().Details
	require.NotNil(t, details)
	require.NotEmpty(t, details.Causes)
	cause := details.Causes[0]
	assert.Equal(t, metav1.CauseTypeFieldManagerConflict, cause.Type)
	assert.Equal(t, ".data.replicas", cause.Field)
	assert.Contains(t, cause.Message, `"first"`)

	// Applying the value the other manager already set is no conflict:
	// both then own the field.
	both, err := apply("second", 2, false)
	require.NoError(t, err)
	assert.True(t, managedBy(both.ManagedFields, "first", metav1.ManagedFieldsOperationApply, ""))
	assert.True(t, managedBy(both.ManagedFields, "second", metav1.ManagedFieldsOperationApply, ""))

	// Forcing takes the field over.
	forced, err := apply("second", 3, true)
	require.NoError(t, err)
	assert.Equal(t, "3", forced.Data["replicas"])
	assert.False(t, managedBy(forced.ManagedFields, "first", metav1.ManagedFieldsOperationApply, ""),
		"the forced field is still owned by its former manager: %+v", forced.ManagedFields)
}

func TestLeaseAndLeaderElection(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	cs := clientset(t, c.RESTConfig())

	type candidate struct {
		elector *leaderelection.LeaderElector
		leading chan struct{}
		cancel  context.CancelFunc
		done    chan struct{}
	}
	start := func(identity string) *candidate {
		cand := &candidate{leading: make(chan struct{}), done: make(chan struct{})}
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: "leader"},
				Client:     cs.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
			},
			LeaseDuration:   4 * time.Second,
			RenewDeadline:   3 * time.Second,
			RetryPeriod:     100 * time.Millisecond,
			ReleaseOnCancel: true,
			Name:            identity,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { close(cand.leading) },
				OnStoppedLeading: func() {},
			},
		})
		require.NoError(t, err)
		cand.elector = elector
		ctx, cancel := context.WithCancel(context.Background())
		cand.cancel = cancel
		go func() {
			defer close(cand.done)
			elector.Run(ctx)
		}()
		t.Cleanup(func() { cancel(); <-cand.done })
		return cand
	}
	waitLeading := func(cand *candidate) {
		t.Helper()
		select {
		case <-cand.leading:
		case <-time.After(waitFor):
			t.Fatal("candidate never became the leader")
		}
	}

	a := start("a")
	waitLeading(a)
	lease, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), "leader", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", ptr.Deref(lease.Spec.HolderIdentity, ""))

	b := start("b")
	wait.For(t, waitFor, func() bool { return b.elector.GetLeader() == "a" }, "b never observed a's lease")
	assert.False(t, b.elector.IsLeader(), "b leads while a holds a valid lease")

	a.cancel() // a releases the lease on its way out
	<-a.done
	waitLeading(b)
	lease, err = cs.CoordinationV1().Leases(ns).Get(t.Context(), "leader", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", ptr.Deref(lease.Spec.HolderIdentity, ""))
	assert.Equal(t, int32(1), ptr.Deref(lease.Spec.LeaseTransitions, 0))
}

func TestRBACDeniesUserWithoutBinding(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	cfg, err := c.RESTConfigFor(restrictedUser)
	require.NoError(t, err)
	restricted := clientset(t, cfg)

	review, err := restricted.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, restrictedUser, review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, "kubetest:testers")

	_, err = restricted.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "want 403 Forbidden, got %v", err)

	// With a binding, the same request is allowed: RBAC, not a broken
	// authenticator, denied it.
	bindConfigMapReader(t, c, ns, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "kubetest:testers"})
	wait.For(t, waitFor, func() bool {
		_, err := restricted.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}, "the group binding never took effect")
	_, err = restricted.CoreV1().ConfigMaps(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the binding leaked out of its namespace: %v", err)

	_, err = c.RESTConfigFor("nobody")
	assert.ErrorContains(t, err, `"nobody"`)
}

func TestServiceAccountHasExactlyItsRBAC(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()

	conn, err := c.ServiceAccountConnection(ctx, ns, "controller")
	require.NoError(t, err)
	sa := clientset(t, restConfigFromConnection(t, conn))

	review, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:"+ns+":controller", review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, "system:serviceaccounts:"+ns)

	_, err = sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "want 403 Forbidden, got %v", err)

	bindConfigMapReader(t, c, ns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "controller"})
	wait.For(t, waitFor, func() bool {
		_, err := sa.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	}, "the ServiceAccount's binding never took effect")
	_, err = sa.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the Role grants ConfigMaps only: %v", err)

	token, err := c.ServiceAccountToken(ctx, ns, "controller")
	require.NoError(t, err)
	_, err = clientset(t, c.RESTConfigForToken(token)).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	assert.NoError(t, err)
}

func bindConfigMapReader(t *testing.T, c *kubetest.Cluster, ns string, subject rbacv1.Subject) {
	t.Helper()
	admin := clientset(t, c.RESTConfig())
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	_, err := admin.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "configmap-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{subject},
	}
	_, err = admin.RbacV1().RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestValidatingAdmissionPolicy(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	admin := clientset(t, c.RESTConfig())

	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-key-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.data) || !('forbidden' in object.data)",
				Message:    "the key forbidden is forbidden",
			}},
		},
	}
	_, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(background(), policy.Name, metav1.DeleteOptions{})
	})
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	_, err = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(background(), binding.Name, metav1.DeleteOptions{})
	})

	// The policy takes effect once the API server's informers have seen
	// it; until then the object is admitted, so each attempt gets a new
	// name.
	var denied error
	wait.For(t, waitFor, func() bool {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "attempt-"},
			Data:       map[string]string{"forbidden": "yes"},
		}
		_, denied = admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return denied != nil
	}, "the ValidatingAdmissionPolicy never denied the object")
	assert.True(t, apierrors.IsInvalid(denied), "want 422 Invalid, got %v", denied)
	assert.Contains(t, denied.Error(), "the key forbidden is forbidden")

	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "allowed"},
		Data:       map[string]string{"fine": "yes"},
	}, metav1.CreateOptions{})
	assert.NoError(t, err)
}

func TestRestartKeepsObjectsAndAddress(t *testing.T) {
	c := cluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	cs := clientset(t, c.RESTConfig())
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kept"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	before := c.Connection().Server

	require.NoError(t, c.StopAPIServer(ctx))
	require.NoError(t, c.StopAPIServer(ctx), "stopping a stopped API server")
	_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
	require.Error(t, err, "the API server still answers after StopAPIServer")
	assert.ErrorContains(t, err, "connection refused")

	require.NoError(t, c.StartAPIServer(ctx))
	require.NoError(t, c.StartAPIServer(ctx), "starting a running API server")
	assert.Equal(t, before, c.Connection().Server)

	// The client made before the restart works again, on the same address.
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v", got.Data["k"])

	require.NoError(t, c.Restart(ctx))
	_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "kept", metav1.GetOptions{})
	require.NoError(t, err)
}

func TestKubeconfigAndConnection(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()

	cfg, err := clientcmd.RESTConfigFromKubeConfig(c.Kubeconfig())
	require.NoError(t, err)
	assert.Equal(t, "https://"+c.Connection().Server, cfg.Host)
	_, err = clientset(t, cfg).CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
	require.NoError(t, err)

	raw, err := clientcmd.Load(c.Kubeconfig())
	require.NoError(t, err)
	assert.Equal(t, "kubetest", raw.CurrentContext)
	assert.NotEmpty(t, raw.Clusters["kubetest"].CertificateAuthorityData, "the CA is embedded")
	assert.NotEmpty(t, raw.AuthInfos["kubetest"].Token, "the token is embedded")

	// /version names the release, as kubectl version and semver parsers
	// of client libraries expect.
	version, err := clientset(t, c.RESTConfig()).Discovery().ServerVersion()
	require.NoError(t, err)
	parsed, err := utilversion.ParseSemantic(version.GitVersion)
	require.NoError(t, err)
	assert.Equal(t, uint(1), parsed.Major())
	assert.Equal(t, "1", version.Major)

	first, second := c.RESTConfig(), c.RESTConfig()
	first.Host = "changed"
	assert.NotEqual(t, first.Host, second.Host, "RESTConfig returned a shared config")

	conn := c.Connection()
	token, err := conn.Token(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, token)
	assert.Equal(t, "127.0.0.1", conn.TLS.ServerName)
	review, err := clientset(t, restConfigFromConnection(t, conn)).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, kubetest.AdminUser, review.Status.UserInfo.Username)
	assert.Contains(t, review.Status.UserInfo.Groups, "system:masters")
}

func TestNamespacePerTest(t *testing.T) {
	c := cluster(t)
	cs := clientset(t, c.RESTConfig())
	var names []string
	t.Run("odd_Chars/and more", func(t *testing.T) {
		a, b := c.Namespace(t), c.Namespace(t)
		assert.NotEqual(t, a, b)
		assert.True(t, strings.HasPrefix(a, "testnamespacepertest-odd-chars-and-more-"), a)
		for _, ns := range []string{a, b} {
			got, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "testnamespacepertest-odd-chars-and-more", got.Labels[kubetest.TestLabel])
			_, err = cs.CoreV1().ServiceAccounts(ns).Get(t.Context(), "default", metav1.GetOptions{})
			assert.NoError(t, err, "namespace %s has no default ServiceAccount", ns)
		}
		names = append(names, a, b)
	})
	for _, ns := range names {
		got, err := cs.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		require.NoError(t, err)
		assert.False(t, got.DeletionTimestamp.IsZero(), "namespace %s was not deleted after its test", ns)
	}
}

func TestOptionsReportEveryMistake(t *testing.T) {
	_, err := kubetest.Run(t.Context(),
		kubetest.WithAuthorization("Webhook"),
		kubetest.WithVerbosity(-1),
		kubetest.WithUser("", "t1"),
		kubetest.WithUser("eve", "a,b"),
		kubetest.WithUser("mallory", "t1", `bad"group`),
		kubetest.WithUser(kubetest.AdminUser, "t2"),
		kubetest.WithCRDs(nil),
		kubetest.WithFeatureGates(map[string]bool{"NoSuchGate": true, "DeclarativeValidation": false}),
		kubetest.WithFakeKubelet(kubelet.Config{ReadyAfter: -time.Second}),
	)
	require.Error(t, err)
	for _, want := range []string{
		`authorization "Webhook"`,
		"verbosity -1",
		`user 0 (""): name: is empty`,
		`user 1 ("eve"): token`,
		`user 2 ("mallory"): token: already the token of user ""`,
		`user 2 ("mallory"): group 0`,
		`user 3 ("kubetest-admin"): name: already taken`,
		"CRD 0: is nil",
		`feature gate "NoSuchGate": unknown`,
		`feature gate "DeclarativeValidation": cannot be set to false, it is locked to true`,
		"fake kubelet: ReadyAfter -1s: must not be negative",
	} {
		assert.ErrorContains(t, err, want)
	}
}

// TestGarbageCollectorInSecondCluster starts a second cluster, with the
// controller manager, next to the shared one: the garbage collector deletes
// a child when its owner goes, ClusterRole aggregation fills an aggregated
// role, AlwaysAllow lets an unbound user through, and the two clusters are
// independent.
func TestGarbageCollectorInSecondCluster(t *testing.T) {
	first := cluster(t)
	ctx := t.Context()

	second := kubetest.Start(t, append(logOptions(t.Output()),
		kubetest.WithControllerManager(),
		kubetest.WithCRDs(widgetCRD()),
		kubetest.WithAuthorization(kubetest.AlwaysAllow),
		kubetest.WithUser("eve", "eve-token"),
	)...)
	rememberAddress(second)
	require.NotEqual(t, first.Connection().Server, second.Connection().Server)

	ns := second.Namespace(t)
	_, err := clientset(t, first.RESTConfig()).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "namespace %s of the second cluster is in the first: %v", ns, err)

	cs := clientset(t, second.RESTConfig())
	aggregated := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widget-reader"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{
			MatchLabels: map[string]string{"kubetest.loam.dev/aggregate-to-widget-reader": "true"},
		}}},
	}
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, aggregated, metav1.CreateOptions{})
	require.NoError(t, err)
	part := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "widget-reader-part",
			Labels: map[string]string{"kubetest.loam.dev/aggregate-to-widget-reader": "true"},
		},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"kubetest.loam.dev"}, Resources: []string{"widgets"}, Verbs: []string{"get"}}},
	}
	_, err = cs.RbacV1().ClusterRoles().Create(ctx, part, metav1.CreateOptions{})
	require.NoError(t, err)
	wait.For(t, waitFor, func() bool {
		got, err := cs.RbacV1().ClusterRoles().Get(ctx, aggregated.Name, metav1.GetOptions{})
		return err == nil && len(got.Rules) == 1 && got.Rules[0].Resources[0] == "widgets"
	}, "ClusterRole aggregation did not fill the aggregated role")

	eve, err := second.RESTConfigFor("eve")
	require.NoError(t, err)
	_, err = clientset(t, eve).CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	assert.NoError(t, err, "AlwaysAllow denied a request")

	client := widgets(t, second, ns)
	owner := createWidget(ctx, t, client, widget(ns, "owner", map[string]any{"size": int64(1)}))
	child, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "child",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "kubetest.loam.dev/v1", Kind: "Widget", Name: owner.GetName(), UID: owner.GetUID(),
		}},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, client.Delete(ctx, owner.GetName(), metav1.DeleteOptions{}))
	wait.For(t, waitFor, func() bool {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, child.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the garbage collector did not delete the child")

	collectsAKindInstalledLater(t, second, ns)

	// Stop is idempotent, and a stopped cluster says so.
	stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, second.Stop(stopCtx))
	require.NoError(t, second.Stop(stopCtx))
	assert.ErrorIs(t, second.StartAPIServer(stopCtx), kubetest.ErrStopped)
	_, err = second.ServiceAccountToken(stopCtx, ns, "late")
	assert.ErrorIs(t, err, kubetest.ErrStopped)
}

// collectsAKindInstalledLater installs a CRD on c, whose controller manager
// started before it, and checks that the garbage collector deletes an
// object of the new kind within GarbageCollectorCollectionBound of its
// owner's deletion: kube-controller-manager's own collector would look for
// the new kind only at its next discovery, up to 30 seconds later.
func collectsAKindInstalledLater(t *testing.T, c *kubetest.Cluster, ns string) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, c.InstallCRDs(ctx, gadgetCRD()))
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	gadgets := dyn.Resource(gadgetGVR).Namespace(ns)

	owner := createWidget(ctx, t, gadgets, gadget(ns, "owner"))
	owned := gadget(ns, "owned")
	owned.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: "kubetest.loam.dev/v1", Kind: "Gadget", Name: owner.GetName(), UID: owner.GetUID(),
	}})
	createWidget(ctx, t, gadgets, owned)

	require.NoError(t, gadgets.Delete(ctx, owner.GetName(), metav1.DeleteOptions{}))
	deleted := time.Now()
	collected := wait.For(t, kubetest.GarbageCollectorCollectionBound, func() bool {
		_, err := gadgets.Get(ctx, owned.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, fmt.Sprintf("the garbage collector did not delete a Gadget, a kind installed after it started, within %v of its owner's deletion",
		kubetest.GarbageCollectorCollectionBound))
	t.Logf("a Gadget was collected %v after its owner's deletion", collected.Sub(deleted).Round(time.Millisecond))
}

// restConfigFromConnection builds a plain client-go config from a
// kube.Connection, the way any client of a Connection would: its TLS config
// and a transport that asks Token for each request's bearer token.
func restConfigFromConnection(t *testing.T, conn kube.Connection) *rest.Config {
	t.Helper()
	return &rest.Config{
		Host: "https://" + conn.Server,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return bearer{next: rt, token: conn.Token}
		},
		Transport: &http.Transport{TLSClientConfig: conn.TLS.Clone(), ForceAttemptHTTP2: true},
		QPS:       -1,
	}
}

type bearer struct {
	next  http.RoundTripper
	token func(context.Context) (string, error)
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := b.token(req.Context())
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(req)
}

func managedBy(fields []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType, subresource string) bool {
	for _, f := range fields {
		if f.Manager == manager && f.Operation == op && f.Subresource == subresource {
			return true
		}
	}
	return false
}
