package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/controllerapp"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The controller tests run the spec's Memcached operator, and its
// DefaultDeny controller of Namespaces, as whole Apps against the shared
// cluster. Each test's Memcached is in an API group of the test's own,
// named after its namespace, and its controller is limited to that
// namespace, so tests never see each other's objects.

// memcachedSpec, memcachedStatus and memcachedResource are the spec's
// Memcached, shared with the scale harness.
type (
	memcachedSpec   = memcached.Spec
	memcachedStatus = memcached.Status
	memcachedObject = memcached.Object
)

// memcachedResource is the spec's Memcached resource, in group.
func memcachedResource(group string) kube.Resource[memcachedSpec, memcachedStatus] {
	return memcached.Resource(group)
}

// controllerGroup is the API group of a test's Memcached.
func controllerGroup(ns string) string { return ns + ".controller.e2e.loam.dev" }

// installMemcached installs the test's Memcached CRD and returns the
// resource.
func installMemcached(t *testing.T, c *kubetest.Cluster, ns string) kube.Resource[memcachedSpec, memcachedStatus] {
	t.Helper()
	r := memcachedResource(controllerGroup(ns))
	crd, err := r.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	return r
}

// seen records who reconciled what: each reconcile's replica and object.
type seen struct {
	mu   sync.Mutex
	list []reconciled
}

type reconciled struct{ identity, name string }

func (s *seen) add(identity, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, reconciled{identity, name})
}

// count returns how many reconciles identity made of name; "" counts
// every replica's, or every object's.
func (s *seen) count(identity, name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.list {
		if (identity == "" || r.identity == identity) && (name == "" || r.name == name) {
			n++
		}
	}
	return n
}

// memcachedReconciler is the spec's Reconciler: it applies a Deployment
// that the Memcached controls, and reports the Deployment's ready replicas
// and whether it is available. It records each reconcile in seen.
type memcachedReconciler struct {
	kube     kubernetes.Interface
	identity string
	seen     *seen
}

func (r memcachedReconciler) Reconcile(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
	r.seen.add(r.identity, m.Name)
	d, err := r.kube.AppsV1().Deployments(m.Namespace).Apply(ctx, memcached.Deployment(m),
		metav1.ApplyOptions{FieldManager: "memcached-controller", Force: true})
	st := m.Status
	if err != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: "Available", Status: metav1.ConditionUnknown, Reason: "ApplyFailed",
			Message: err.Error(), ObservedGeneration: m.Generation,
		})
		return kube.Result[memcachedStatus]{Status: &st}, err
	}
	st.ReadyReplicas = d.Status.ReadyReplicas
	meta.SetStatusCondition(&st.Conditions, available(d, m.Generation))
	return kube.Result[memcachedStatus]{Status: &st}, nil
}

// available is the spec's: the Deployment's own Available condition,
// Unknown until the Deployment controller writes it, which no controller
// of the test cluster does.
func available(d *appsv1.Deployment, generation int64) metav1.Condition {
	c := metav1.Condition{
		Type: "Available", Status: metav1.ConditionUnknown, Reason: "DeploymentPending",
		ObservedGeneration: generation,
	}
	for _, dc := range d.Status.Conditions {
		if dc.Type != appsv1.DeploymentAvailable {
			continue
		}
		c.Status, c.Message = metav1.ConditionStatus(dc.Status), dc.Message
		if dc.Reason != "" {
			c.Reason = dc.Reason
		}
	}
	return c
}

// settingsFor returns a Controller's Settings for the tests: its Lease in
// leaseNamespace as identity, with Kubernetes' own durations, which a
// busy test cluster renews in time; the first replica takes a Lease that
// nobody holds at once.
func settingsFor(name, leaseNamespace, identity string) kube.Settings {
	s := kube.DefaultSettings()
	s.Name = name
	s.RetryMaxDelay = time.Second
	s.LeaderElection.Namespace = leaseNamespace
	s.LeaderElection.Identity = identity
	return s
}

// shortLease makes a Lease short, so a standby takes it over in about
// four seconds: the chaos suite's timings, 4 s, 2 s and 0.5 s, fenced in
// client-go's whole seconds with a margin of 1 s (settings.FenceMargin;
// docs/reliability.md). 2 s, 1.2 s and 0.4 s are not: a standby may count
// from a renewal 0.8 s before the last one, and a leader must have a
// renewal accepted every 0.8 s, which a loaded machine misses.
func shortLease(s *kube.Settings) {
	s.LeaderElection.LeaseDuration = 4 * time.Second
	s.LeaderElection.RenewDeadline = 2 * time.Second
	s.LeaderElection.RetryPeriod = 500 * time.Millisecond
}

// controllerApp is an App that serves one Controller.
type controllerApp struct {
	*apptest.App
	network *network
	ctrl    *kube.Controller
}

// startController runs an App whose Init builds a Client of conn and the
// Controller build returns, on a Host whose network the test can cut.
func startController(t *testing.T, conn kube.Connection, build controllerapp.Build) *controllerApp {
	t.Helper()
	n := &network{}
	a, ctrl := controllerapp.Start(t, conn, build, app.WithHost(app.Host{Network: n}))
	return &controllerApp{App: a, network: n, ctrl: ctrl}
}

// synced reports whether the App's Controller says its caches synced.
func (a *controllerApp) synced(t *testing.T) bool {
	t.Helper()
	ok, err := a.ctrl.Synced().Healthy(t.Context())
	require.NoError(t, err)
	return ok
}

// Report describes the App for a failed wait.
func (a *controllerApp) Report() string { return wait.Report("the App", a.App, a.Telemetry()) }

// failure returns the message of the App's record that its Controller's
// Serve failed, or "" when there is none.
func (a *controllerApp) failure() string {
	if msgs := a.Telemetry().ExceptionMessages("service failed"); len(msgs) > 0 {
		return msgs[0]
	}
	return ""
}

// network is an App's network: the real one, until the test cuts it,
// which closes every connection and refuses every dial, as a replica cut
// off from the API server sees it.
type network = apptest.Switch

// clients are the test's own clients, as the cluster's admin.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
}

func adminClients(t *testing.T, c *kubetest.Cluster) clients {
	t.Helper()
	k, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return clients{kube: k, dynamic: d}
}

// grant gives the ServiceAccount ns/name the ClusterRole rules, bound
// cluster-wide, and the Lease's Role in leaseNamespace, as the spec's RBAC
// section writes them, and returns a Connection as that ServiceAccount,
// once the API server authorizes it.
func grant(t *testing.T, c *kubetest.Cluster, ns, name string, rules []rbacv1.PolicyRule, leaseNamespace string, canList ...schema.GroupVersionResource) kube.Connection {
	t.Helper()
	ctx := t.Context()
	admin := adminClients(t, c).kube
	rbac := admin.RbacV1()
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}}
	role := ns + "-" + name
	_, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subject,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = rbac.ClusterRoleBindings().Delete(ctx, role, metav1.DeleteOptions{})
		_ = rbac.ClusterRoles().Delete(ctx, role, metav1.DeleteOptions{})
	})
	_, err = rbac.Roles(leaseNamespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-leader-election"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = rbac.RoleBindings(leaseNamespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-leader-election"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-leader-election"},
		Subjects:   subject,
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	conn, err := c.ServiceAccountConnection(ctx, ns, name)
	require.NoError(t, err)
	// The authorizer sees new bindings a moment later: wait until it lists
	// what the Controller will.
	as, err := dynamic.NewForConfig(restConfig(conn))
	require.NoError(t, err)
	wait.For(t, 30*time.Second, func() bool {
		for _, gvr := range canList {
			if _, err := as.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return false
			}
		}
		_, err := kubernetes.NewForConfigOrDie(restConfig(conn)).CoordinationV1().Leases(leaseNamespace).Get(ctx, "none", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the ServiceAccount's RBAC never took effect")
	return conn
}

// memcachedRules are the spec's ClusterRole for the Memcached controller
// with its Finalize: the Controller's own, and its Reconciler's, with the
// Events every Controller records.
func memcachedRules(group string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{"memcacheds"}, Verbs: []string{"list", "watch", "patch"}},
		{APIGroups: []string{group}, Resources: []string{"memcacheds/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"list", "watch", "patch", "create"}},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// lease returns the Lease named name in ns, or nil when there is none.
func lease(t *testing.T, k kubernetes.Interface, ns, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := k.CoordinationV1().Leases(ns).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return l
}

// deploymentsGVR is what the Memcached controller owns.
var deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
