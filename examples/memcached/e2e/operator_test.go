package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// patience bounds every wait for the operator.
const patience = 30 * time.Second

// podName is the operator's pod, as the downward API names it: its
// identity on both Leases.
const podName = "memcached-controller-0"

// operator is one test's operator and the test's own clients, as the
// cluster's admin.
type operator struct {
	ns   string
	user string // the ServiceAccount's user name
	app  *apptest.App
	// shards is the Memcached controller's CONTROLLER_SHARDS, as
	// deployment.yaml sets it, once the operator is started.
	shards     int
	kube       kubernetes.Interface
	memcacheds dynamic.ResourceInterface
}

// newOperator installs the CRD, makes a namespace for the test, and binds
// rbac.yaml's ServiceAccount in it to clusterRules and roleRules; the
// operator isn't started yet, so the test can create objects first.
func newOperator(t *testing.T, f rbacObjects, clusterRules, roleRules []rbacv1.PolicyRule) (*operator, []byte) {
	t.Helper()
	crd, err := memcached.Memcached.CRD()
	require.NoError(t, err)
	o, kubeconfig := newOperatorOn(t, cluster.Cluster(t), crd, f, clusterRules, roleRules)
	// Every operator watches every namespace: what a test leaves behind
	// would be reconciled by the next test's. Its cleanup runs after the
	// operator has stopped.
	t.Cleanup(func() { o.deleteAll(t) })
	return o, kubeconfig
}

// newOperatorOn is newOperator on the cluster c, with crd as the
// Memcached CRD, and without its cleanup: a cluster of the test's own
// goes with the test.
func newOperatorOn(t *testing.T, c *kubetest.Cluster, crd *apiextensionsv1.CustomResourceDefinition, f rbacObjects, clusterRules, roleRules []rbacv1.PolicyRule) (*operator, []byte) {
	t.Helper()
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	ns := c.Namespace(t)
	kubeconfig := grant(t, c, ns, f, clusterRules, roleRules)
	kc, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return &operator{
		ns:         ns,
		user:       serviceAccountUser(ns, f.serviceAccount.Name),
		kube:       kc,
		memcacheds: dyn.Resource(memcached.Memcached.GVR()).Namespace(ns),
	}, kubeconfig
}

// start runs memcached.Init as an App, as the operator's main runs it,
// with deployment.yaml's environment, connecting with kubeconfig through
// MEMCACHED_KUBECONFIG, on the real network.
func (o *operator) start(t *testing.T, f rbacObjects, kubeconfig []byte) {
	t.Helper()
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"kubeconfig": kubeconfig}))
	env := operatorEnv(t, f, o.ns, podName)
	env["MEMCACHED_KUBECONFIG"] = h.Path("kubeconfig")
	o.shards = shardsOf(t, env)
	o.app = apptest.Start(t, memcached.Init,
		apptest.WithHost(h),
		apptest.WithEnv(env),
		apptest.WithAppOptions(app.WithHost(app.Host{Network: app.OSHost().Network, FS: h.FS()})),
	)
}

// deleteAll deletes the test's Memcacheds, Deployments,
// PodDisruptionBudgets and the ConfigMaps it made: no garbage collector
// runs, and the test's namespace keeps its objects while it is
// Terminating.
func (o *operator) deleteAll(t *testing.T) {
	ctx := context.WithoutCancel(t.Context())
	all := metav1.ListOptions{}
	err := o.memcacheds.DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	require.NoError(t, err)
	require.NoError(t, o.kube.AppsV1().Deployments(o.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	require.NoError(t, o.kube.PolicyV1().PodDisruptionBudgets(o.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all))
	require.NoError(t, o.kube.CoreV1().ConfigMaps(o.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: madeByTest}))
}

// create creates the Memcached name of size pods, as the cluster's admin.
func (o *operator) create(t *testing.T, name string, size int) *unstructured.Unstructured {
	t.Helper()
	return o.createNaming(t, name, size, "")
}

// createNaming creates the Memcached name of size pods whose flags are
// the ConfigMap configMap's, none for "", as the cluster's admin.
func (o *operator) createNaming(t *testing.T, name string, size int, configMap string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{"size": size}
	if configMap != "" {
		spec["configMap"] = configMap
	}
	u, err := o.memcacheds.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": memcached.Memcached.Group + "/" + memcached.Memcached.Version,
		"kind":       memcached.Memcached.Kind,
		"metadata":   map[string]any{"name": name, "namespace": o.ns},
		"spec":       spec,
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return u
}

// madeByTest is the label selector of the ConfigMaps a test makes, which
// deleteAll deletes, leaving the namespace's own, kube-root-ca.crt.
const madeByTest = "test.loam.dev/made-by=memcached-e2e"

// createConfigMap creates the ConfigMap name with data, as the cluster's
// admin.
func (o *operator) createConfigMap(t *testing.T, name string, data map[string]string) {
	t.Helper()
	_, err := o.kube.CoreV1().ConfigMaps(o.ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.ns, Labels: map[string]string{"test.loam.dev/made-by": "memcached-e2e"}},
		Data:       data,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// updateConfigMap changes the ConfigMap name as change says, as the
// cluster's admin.
func (o *operator) updateConfigMap(t *testing.T, name string, change func(cm *corev1.ConfigMap)) {
	t.Helper()
	cms := o.kube.CoreV1().ConfigMaps(o.ns)
	cm, err := cms.Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	change(cm)
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// memcached returns the Memcached name, and false once it is gone.
func (o *operator) memcached(t *testing.T, name string) (memcached.Object, bool) {
	t.Helper()
	u, err := o.memcacheds.Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return memcached.Object{}, false
	}
	require.NoError(t, err)
	var m memcached.Object
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m))
	return m, true
}

// deployment returns the Deployment name, and false when there is none.
func (o *operator) deployment(t *testing.T, name string) (*appsv1.Deployment, bool) {
	t.Helper()
	d, err := o.kube.AppsV1().Deployments(o.ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return d, true
}

// budget returns the PodDisruptionBudget name, and false when there is
// none.
func (o *operator) budget(t *testing.T, name string) (*policyv1.PodDisruptionBudget, bool) {
	t.Helper()
	p, err := o.kube.PolicyV1().PodDisruptionBudgets(o.ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return p, true
}

// leases returns the test's Leases by name.
func (o *operator) leases(t *testing.T) map[string]coordinationv1.Lease {
	t.Helper()
	l, err := o.kube.CoordinationV1().Leases(o.ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	leases := map[string]coordinationv1.Lease{}
	for _, lease := range l.Items {
		leases[lease.Name] = lease
	}
	return leases
}

// record is one of the App's log records, as a test reads it.
type record struct {
	body       string
	controller string // loam.kube.controller.name
	object     string // loam.kube.object.name
	message    string // exception.message
}

// records returns the App's log records whose body is body.
func (o *operator) records(body string) []record {
	var rs []record
	for _, r := range o.app.Telemetry().Records() {
		if r.Body().AsString() != body {
			continue
		}
		rec := record{body: body}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			switch kv.Key {
			case "loam.kube.controller.name":
				rec.controller = kv.Value.AsString()
			case "loam.kube.object.name":
				rec.object = kv.Value.AsString()
			case "exception.message":
				rec.message = kv.Value.AsString()
			}
			return true
		})
		rs = append(rs, rec)
	}
	return rs
}

// recordWith returns the first of the App's records whose body is body and
// whose exception.message contains every one of parts.
func (o *operator) recordWith(body string, parts ...string) (record, bool) {
	for _, r := range o.records(body) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(r.message, p)
		}
		if all {
			return r, true
		}
	}
	return record{}, false
}

// Done is closed once the operator's App has exited.
func (o *operator) Done() <-chan struct{} { return o.app.Done() }

// Report describes the operator's App for a failed wait or check: its
// exit, its records and its stderr.
func (o *operator) Report() string { return wait.Report("the operator", o.app, o.app.Telemetry()) }

// wait waits, at most within, for the App to exit, and returns its exit
// code.
func (o *operator) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-o.app.Done():
		return o.app.Wait()
	case <-time.After(within):
		t.Fatalf("the App still runs after %s\n\n%s", within, o.Report())
		return 0
	}
}
