package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The operator, with exactly rbac.yaml's rules and sharded as
// deployment.yaml runs it, does all it does: the Memcached's Deployment
// applied and controlled by it, its status written and following the
// Deployment's, Budget's PodDisruptionBudget applied and controlled by
// the Deployment, every Lease held (the Memcached controller's membership
// Lease and each of its shards', and Budget's) and then released at
// SIGTERM, and not one failure on the way. It has no Finalize: the
// Memcached carries no finalizer and goes at once when deleted.
func TestOperator_works_as_the_ServiceAccount_with_exactly_deploy_rbac_yaml_s_rules(t *testing.T) {
	f := readRBAC(t)
	operatorWorks(t, f, f.clusterRole.Rules, f.role.Rules)
}

// The docs' rules themselves, run: the operator does all it does with the
// ClusterRole and the Role that docs/kubernetes.md prints, and Budget's
// rules from rbac.yaml, which the docs leave out since they describe the
// Memcached controller alone.
func TestOperator_works_as_the_ServiceAccount_with_the_docs_rules_and_Budget_s(t *testing.T) {
	f, docs := readRBAC(t), docsRBAC(t)
	var budget []rbacv1.PolicyRule
	for _, r := range f.clusterRole.Rules {
		if slices.Contains(r.Resources, "poddisruptionbudgets") {
			budget = append(budget, r)
		}
	}
	require.NotEmpty(t, budget, "rbac.yaml grants Budget's PodDisruptionBudgets")
	operatorWorks(t, f, append(slices.Clone(docs.clusterRole.Rules), budget...), docs.role.Rules)
}

// operatorWorks runs the operator, as deployment.yaml does, as a
// ServiceAccount granted clusterRules and the Lease's roleRules, and
// checks that it does all it does with not one failure: see
// TestOperator_works_as_the_ServiceAccount_with_exactly_deploy_rbac_yaml_s_rules.
func operatorWorks(t *testing.T, f rbacObjects, clusterRules, roleRules []rbacv1.PolicyRule) {
	t.Helper()
	o, kubeconfig := newOperator(t, f, clusterRules, roleRules)
	m := o.create(t, "cache", 2)
	started := time.Now()
	o.start(t, f, kubeconfig)
	require.Positive(t, o.shards, "deployment.yaml runs the Memcached controller sharded")

	// The one replica takes every shard: no other announced itself.
	want := memcachedLeases(o.shards)
	var self string
	wait.For(t, patience, func() bool {
		leases := o.leases(t)
		self = holder(leases[memberLease])
		if self == "" {
			return false
		}
		for _, name := range want {
			if holder(leases[name]) != self {
				return false
			}
		}
		return true
	}, "the replica never held its membership Lease and every shard's", o)
	t.Logf("the replica held its membership Lease and the %d shards' %v after its start", o.shards, time.Since(started).Round(time.Millisecond))
	require.True(t, strings.HasPrefix(self, podName+"_"), "the sharded Leases' holder is the pod's name and the process's incarnation: %q", self)

	wait.For(t, patience, func() bool {
		got, _ := o.memcached(t, "cache")
		c := meta.FindStatusCondition(got.Status.Conditions, "Available")
		return c != nil && c.Reason == "DeploymentPending" && c.ObservedGeneration == 1
	}, "the Memcached's status never said its Deployment is pending", o)
	d, ok := o.deployment(t, "cache")
	require.True(t, ok, "the Deployment is applied")
	require.Equal(t, int32(2), *d.Spec.Replicas)
	require.True(t, metav1.IsControlledBy(d, m), "the Memcached controls its Deployment")

	wait.For(t, patience, func() bool {
		_, ok := o.budget(t, "cache")
		return ok
	}, "Budget never applied the PodDisruptionBudget", o)
	p, _ := o.budget(t, "cache")
	require.True(t, metav1.IsControlledBy(p, d), "the Deployment controls its PodDisruptionBudget")
	require.Equal(t, 1, p.Spec.MaxUnavailable.IntValue())

	// Playing the Deployment controller, which kubetest doesn't run: the
	// status follows the Deployment's, through the Owns watch.
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentAvailable, Status: "True", Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability.",
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	_, err := o.kube.AppsV1().Deployments(o.ns).UpdateStatus(t.Context(), d, metav1.UpdateOptions{})
	require.NoError(t, err)
	wait.For(t, patience, func() bool {
		got, _ := o.memcached(t, "cache")
		c := meta.FindStatusCondition(got.Status.Conditions, "Available")
		return got.Status.ReadyReplicas == 2 && c != nil && c.Status == metav1.ConditionTrue && c.Reason == "MinimumReplicasAvailable"
	}, "the Memcached's status never followed its Deployment's", o)

	leases := o.leases(t)
	names := make([]string, 0, len(leases))
	for name := range leases {
		names = append(names, name)
	}
	require.ElementsMatch(t, append(want, budgetLease), names,
		"the Memcached controller's membership Lease and its %d shards', and Budget's", o.shards)
	for _, name := range want {
		require.Equal(t, self, holder(leases[name]), "the replica holds %s", name)
	}
	require.Equal(t, podName, holder(leases[budgetLease]), "the operator leads Budget's controller")
	got, _ := o.memcached(t, "cache")
	require.Empty(t, got.Finalizers, "the operator has no Finalize")
	require.NoError(t, o.memcacheds.Delete(t.Context(), "cache", metav1.DeleteOptions{}))
	_, ok = o.memcached(t, "cache")
	require.False(t, ok, "nothing holds a deleted Memcached")

	require.Equal(t, 0, o.app.Stop(), "SIGTERM: a clean exit; records: %s", o.Report())
	for _, l := range o.leases(t) {
		require.Empty(t, holder(l), "SIGTERM released %s", l.Name)
	}
	require.Empty(t, o.records("reconcile failed"), o.Report())
	require.Empty(t, o.records("service failed"), o.Report())
	for _, r := range o.app.Telemetry().Records() {
		severity := r.Severity().String()
		require.False(t, strings.HasPrefix(severity, "ERROR") || strings.HasPrefix(severity, "FATAL"),
			"no error of any kind, such as a refused watch or Lease: %s", o.Report())
	}
}

// The names of the operator's Leases, after deployment.yaml's
// CONTROLLER_NAME and podName: the sharded Memcached controller's
// membership Lease, and Budget's, which is leader-elected.
const (
	memberLease = "memcached-controller-member-" + podName
	budgetLease = "memcached-controller-budget"
)

// memcachedLeases returns the sharded Memcached controller's Leases, with
// shards shards: the replica's membership Lease and each shard's.
func memcachedLeases(shards int) []string {
	names := []string{memberLease}
	for i := range shards {
		names = append(names, fmt.Sprintf("memcached-controller-shard-%d", i))
	}
	return names
}

// holder returns the identity that holds l, "" for none.
func holder(l coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// without returns rules without verb on resource; a rule left with no
// verb is dropped.
func without(rules []rbacv1.PolicyRule, p permission) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		r = *r.DeepCopy()
		if r.APIGroups[0] == p.group && r.Resources[0] == p.resource {
			var verbs []string
			for _, v := range r.Verbs {
				if v != p.verb {
					verbs = append(verbs, v)
				}
			}
			r.Verbs = verbs
		}
		if len(r.Verbs) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// failure is what the operator can't do without one permission, and how
// the test tells that failure from any other.
type failure struct {
	// operation names what fails, and how it shows.
	operation string
	// alone is set for a failure seen in the objects of the cluster,
	// which every other row's operator watches, in every namespace, and
	// would change: the row runs by itself. The other rows create no
	// object and read only their own App's records and exit, so they run
	// in parallel.
	alone bool
	// check starts the operator, with start, and asserts the failure.
	check func(t *testing.T, o *operator, start func())
}

// forbidden is the API server's reason for refusing o's ServiceAccount
// verb on resource of group, in ns, or cluster-wide for "".
func forbidden(o *operator, verb, resource, group, ns string) string {
	where := "at the cluster scope"
	if ns != "" {
		where = fmt.Sprintf("in the namespace %q", ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q %s", o.user, verb, resource, group, where)
}

// serveFails: Serve's first list of gvr is refused, so Serve fails at
// once and the App exits 1, naming the resource.
func serveFails(gvr schema.GroupVersionResource, qualified string) failure {
	return failure{
		operation: fmt.Sprintf("Serve's list of %s: Serve fails, the App exits 1 naming it", gvr.Resource),
		check: func(t *testing.T, o *operator, start func()) {
			start()
			require.Equal(t, 1, o.wait(t, patience), "the App exits 1")
			want := fmt.Sprintf("kube: listing %s: %s is forbidden: %s", gvr, qualified, forbidden(o, "list", gvr.Resource, gvr.Group, ""))
			fails := o.records("service failed")
			require.NotEmpty(t, fails, o.Report())
			require.Equal(t, want, fails[0].message)
		},
	}
}

// watchRefused: an informer's watch of resource is refused, which
// client-go's reflector logs, through the App, as it retries.
func watchRefused(resource, group string) failure {
	return failure{
		operation: fmt.Sprintf("the informers' watch of %s: refused, client-go logs \"Failed to watch\" naming it", resource),
		check: func(t *testing.T, o *operator, start func()) {
			start()
			wait.For(t, patience, func() bool {
				_, ok := o.recordWith("Failed to watch", forbidden(o, "watch", resource, group, ""))
				return ok
			}, "no record of the refused watch", o)
		},
	}
}

// statusRefused: the Memcached's status apply is refused; the reconcile
// fails saying so, and the Memcached has no status, though its
// Deployment is applied.
func statusRefused() failure {
	return failure{
		operation: "the status apply: the reconcile fails with \"applying status\" forbidden; no status, the Deployment applied",
		alone:     true,
		check: func(t *testing.T, o *operator, start func()) {
			o.create(t, "cache", 1)
			start()
			var r record
			wait.For(t, patience, func() bool {
				var ok bool
				r, ok = o.recordWith("reconcile failed", "applying status: ", forbidden(o, "patch", "memcacheds/status", memcached.Memcached.Group, o.ns))
				return ok
			}, "no reconcile failed on the status apply", o)
			require.Equal(t, "memcached-controller", r.controller)
			require.Equal(t, "cache", r.object)
			m, _ := o.memcached(t, "cache")
			require.Empty(t, m.Status.Conditions, "no status is written")
			_, ok := o.deployment(t, "cache")
			require.True(t, ok, "the Reconciler's own apply works")
		},
	}
}

// applyRefused: the Reconciler's apply of the Deployment is refused for
// want; the Memcached's status says why, and there is no Deployment.
func applyRefused(verb string) failure {
	return failure{
		operation: fmt.Sprintf("the Reconciler's apply of the Deployment: the status's Available is ApplyFailed, \"cannot %s\" deployments; no Deployment", verb),
		alone:     true,
		check: func(t *testing.T, o *operator, start func()) {
			o.create(t, "cache", 1)
			start()
			wait.For(t, patience, func() bool {
				m, _ := o.memcached(t, "cache")
				c := meta.FindStatusCondition(m.Status.Conditions, "Available")
				return c != nil && c.Reason == "ApplyFailed" &&
					strings.Contains(c.Message, forbidden(o, verb, "deployments", appsv1.GroupName, o.ns))
			}, "the Memcached's status never said its apply failed", o)
			_, ok := o.deployment(t, "cache")
			require.False(t, ok, "no Deployment")
		},
	}
}

// budgetRefused: Budget's apply of the PodDisruptionBudget is refused for
// verb; its reconcile of the Deployment fails saying so, and there is no
// PodDisruptionBudget, while the Memcached controller does its part.
func budgetRefused(verb string) failure {
	return failure{
		operation: fmt.Sprintf("Budget's apply of the PodDisruptionBudget: Budget's reconcile fails, \"cannot %s\" poddisruptionbudgets; none applied", verb),
		alone:     true,
		check: func(t *testing.T, o *operator, start func()) {
			o.create(t, "cache", 1)
			start()
			var r record
			wait.For(t, patience, func() bool {
				var ok bool
				r, ok = o.recordWith("reconcile failed", forbidden(o, verb, "poddisruptionbudgets", policyv1.GroupName, o.ns))
				return ok
			}, "no reconcile of Budget's failed", o)
			require.Equal(t, "memcached-controller-budget", r.controller)
			require.Equal(t, "cache", r.object)
			_, ok := o.budget(t, "cache")
			require.False(t, ok, "no PodDisruptionBudget")
			// Budget reconciles the Deployment the Memcached's reconcile
			// applied before its status write ends: wait for that write,
			// not race it.
			var c *metav1.Condition
			wait.For(t, patience, func() bool {
				m, _ := o.memcached(t, "cache")
				c = meta.FindStatusCondition(m.Status.Conditions, "Available")
				return c != nil
			}, "the Memcached controller writes the status", o)
			require.Equal(t, "DeploymentPending", c.Reason)
		},
	}
}

// leaseRefused: leader election's verb on a Lease is refused, which it
// logs as body, for Budget's Lease and for the sharded Memcached
// controller's membership Lease alike; neither controller ever holds a
// Lease, and no Lease is made.
func leaseRefused(verb, body string) failure {
	return failure{
		operation: fmt.Sprintf("leader election's %s of the Lease: %q, never leads, no Lease", verb, body),
		check: func(t *testing.T, o *operator, start func()) {
			start()
			wait.For(t, patience, func() bool {
				controllers := map[string]bool{}
				for _, r := range o.records(body) {
					if strings.Contains(r.message, forbidden(o, verb, "leases", coordinationv1.GroupName, o.ns)) {
						controllers[r.controller] = true
					}
				}
				return controllers["memcached-controller"] && controllers["memcached-controller-budget"]
			}, "neither controller logged the refusal", o)
			require.Empty(t, o.leases(t), "no Lease")
			require.Empty(t, o.records("Successfully acquired lease"), "never leads")
		},
	}
}

// renewRefused: the Leases are created, so the operator leads Budget's
// controller and holds the Memcached controller's shards, but never
// renewed; after RenewDeadline a Lease is given up, Serve returns
// ErrLostLeadership and the App exits 1.
func renewRefused() failure {
	return failure{
		operation: "leader election's renewal: \"Failed to update lease\", the Lease lost after RenewDeadline, the App exits 1 with ErrLostLeadership",
		check: func(t *testing.T, o *operator, start func()) {
			start()
			// RenewDeadline is 10s, and a slack for a loaded machine.
			require.Equal(t, 1, o.wait(t, kube.DefaultSettings().LeaderElection.RenewDeadline+patience), "the App exits 1")
			require.NotEmpty(t, o.records("Successfully acquired lease"), "creating the Lease is enough to lead")
			_, ok := o.recordWith("Failed to update lease", forbidden(o, "update", "leases", coordinationv1.GroupName, o.ns))
			require.True(t, ok, "the renewal's update is refused: %s", o.Report())
			fails := o.records("service failed")
			require.NotEmpty(t, fails, o.Report())
			require.Contains(t, fails[0].message, kube.ErrLostLeadership.Error())
		},
	}
}

// leasesListRefused: the sharded Memcached controller's Serve first
// lists its Leases, which is refused: Serve fails at once naming them,
// the App exits 1, and the controller has made none of its Leases.
func leasesListRefused() failure {
	return failure{
		operation: "the sharded controller's list of its Leases: Serve fails naming them, the App exits 1, no Lease of the Memcached controller's",
		check: func(t *testing.T, o *operator, start func()) {
			start()
			require.Equal(t, 1, o.wait(t, patience), "the App exits 1")
			want := fmt.Sprintf("kube: controller memcached-controller: listing the Leases of controller memcached-controller in namespace %s: leases.coordination.k8s.io is forbidden: %s",
				o.ns, forbidden(o, "list", "leases", coordinationv1.GroupName, o.ns))
			fails := o.records("service failed")
			require.NotEmpty(t, fails, o.Report())
			require.Equal(t, want, fails[0].message)
			for _, name := range memcachedLeases(o.shards) {
				require.NotContains(t, o.leases(t), name, "the Memcached controller never announced itself nor campaigned")
			}
		},
	}
}

// leasesWatchRefused: the sharded Memcached controller's watch of its
// Leases, by which each replica sees the others and the free shards, is
// refused, which client-go's reflector logs, through the App, naming the
// Leases of the controller's namespace, as it lists them again and
// retries.
func leasesWatchRefused() failure {
	return failure{
		operation: "the sharded controller's watch of its Leases: refused, client-go logs \"Failed to watch\" naming the Leases",
		check: func(t *testing.T, o *operator, start func()) {
			start()
			var r record
			wait.For(t, patience, func() bool {
				var ok bool
				r, ok = o.recordWith("Failed to watch", forbidden(o, "watch", "leases", coordinationv1.GroupName, o.ns))
				return ok
			}, "no record of the refused watch of the Leases", o)
			require.Equal(t, "memcached-controller", r.controller, "the sharded controller's watch")
		},
	}
}

// eventRefused: the Events' verb is refused, which the Memcached
// controller's writer of Events logs as body, naming the refusal. A
// Memcached that names a ConfigMap that doesn't exist makes the
// Reconciler record ConfigMapMissing: its first occurrence is created
// (create), and the repeats that each change of the Memcached's labels
// reconciles count in its series, patched (patch).
func eventRefused(verb, body string) failure {
	return failure{
		operation: fmt.Sprintf("the Events of a Memcached whose ConfigMap is missing: %q, \"cannot %s\" events", body, verb),
		alone:     true,
		check: func(t *testing.T, o *operator, start func()) {
			o.createNaming(t, "cache", 1, "missing")
			start()
			touches := 0
			wait.For(t, patience, func() bool {
				if _, ok := o.recordWith(body, forbidden(o, verb, "events", eventsv1.GroupName, o.ns)); ok {
					return true
				}
				// Each change of a label reconciles the Memcached again,
				// and records ConfigMapMissing again: a repeat.
				touches++
				patch := fmt.Sprintf(`{"metadata":{"labels":{"test.loam.dev/touch":"%d"}}}`, touches)
				_, err := o.memcacheds.Patch(t.Context(), "cache", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				require.NoError(t, err)
				return false
			}, "no record of the refused Event", o)
			// The refused Event is recorded during the reconcile, before
			// its status write ends: wait for that write, not race it.
			var c *metav1.Condition
			wait.For(t, patience, func() bool {
				m, _ := o.memcached(t, "cache")
				c = meta.FindStatusCondition(m.Status.Conditions, "Available")
				return c != nil
			}, "the reconcile goes on: the status is written", o)
			require.Equal(t, memcached.ReasonConfigMapMissing, c.Reason)
		},
	}
}

// failures is the table: for each verb of rbac.yaml's rules, what fails
// without it. A verb the file grants and the table doesn't name, or the
// other way round, fails the test.
func failures() map[permission]failure {
	memcacheds := memcached.Memcached.GVR()
	deployments := appsv1.SchemeGroupVersion.WithResource("deployments")
	budgets := policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	return map[permission]failure{
		{memcached.Memcached.Group, "memcacheds", "list"}:         serveFails(memcacheds, "memcacheds.cache.example.com"),
		{memcached.Memcached.Group, "memcacheds", "watch"}:        watchRefused("memcacheds", memcached.Memcached.Group),
		{memcached.Memcached.Group, "memcacheds/status", "patch"}: statusRefused(),
		{appsv1.GroupName, "deployments", "list"}:                 serveFails(deployments, "deployments.apps"),
		{appsv1.GroupName, "deployments", "watch"}:                watchRefused("deployments", appsv1.GroupName),
		{appsv1.GroupName, "deployments", "patch"}:                applyRefused("patch"),
		{appsv1.GroupName, "deployments", "create"}:               applyRefused("create"),
		{corev1.GroupName, "configmaps", "list"}:                  serveFails(configMaps, "configmaps"),
		{corev1.GroupName, "configmaps", "watch"}:                 watchRefused("configmaps", corev1.GroupName),
		{policyv1.GroupName, "poddisruptionbudgets", "list"}:      serveFails(budgets, "poddisruptionbudgets.policy"),
		{policyv1.GroupName, "poddisruptionbudgets", "watch"}:     watchRefused("poddisruptionbudgets", policyv1.GroupName),
		{policyv1.GroupName, "poddisruptionbudgets", "patch"}:     budgetRefused("patch"),
		{policyv1.GroupName, "poddisruptionbudgets", "create"}:    budgetRefused("create"),
		{coordinationv1.GroupName, "leases", "get"}:               leaseRefused("get", "Error retrieving lease lock"),
		{coordinationv1.GroupName, "leases", "create"}:            leaseRefused("create", "Error initially creating lease lock"),
		{coordinationv1.GroupName, "leases", "update"}:            renewRefused(),
		{coordinationv1.GroupName, "leases", "list"}:              leasesListRefused(),
		{coordinationv1.GroupName, "leases", "watch"}:             leasesWatchRefused(),
		{eventsv1.GroupName, "events", "create"}:                  eventRefused("create", "creating an event failed"),
		{eventsv1.GroupName, "events", "patch"}:                   eventRefused("patch", "patching an event's series failed"),
	}
}

// firstUse is, for each rule, the verb the operator uses first: what
// fails when the whole rule is taken away.
var firstUse = map[string]string{
	memcached.Memcached.Group + "/memcacheds":        "list",
	memcached.Memcached.Group + "/memcacheds/status": "patch",
	appsv1.GroupName + "/deployments":                "list",
	corev1.GroupName + "/configmaps":                 "list",
	policyv1.GroupName + "/poddisruptionbudgets":     "list",
	// The sharded Memcached controller's Serve lists its Leases before
	// either controller campaigns.
	coordinationv1.GroupName + "/leases": "list",
	eventsv1.GroupName + "/events":       "create",
}

// row is one case of the table: rbac.yaml's rules with one rule, or one
// verb of a rule, taken away, and the permission whose failure it shows.
type row struct {
	name                    string
	clusterRules, roleRules []rbacv1.PolicyRule
	fails                   permission
}

// rows returns a row for each rule of rbac.yaml's ClusterRole and Role,
// and one for each verb of a rule of several.
func rows(t *testing.T, f rbacObjects) []row {
	t.Helper()
	var rs []row
	add := func(kind string, rules []rbacv1.PolicyRule, set func(*row, []rbacv1.PolicyRule)) {
		for i, r := range rules {
			key := r.APIGroups[0] + "/" + r.Resources[0]
			verb, ok := firstUse[key]
			require.True(t, ok, "the table doesn't say what fails without the rule %s", key)
			group := r.APIGroups[0]
			if group == "" {
				group = "core" // as permission.String names it
			}
			whole := row{name: kind + " " + group + "/" + r.Resources[0], fails: permission{r.APIGroups[0], r.Resources[0], verb}}
			set(&whole, slices.Delete(slices.Clone(rules), i, i+1))
			rs = append(rs, whole)
			if len(r.Verbs) == 1 {
				continue // the row of the rule is the row of its verb
			}
			for _, v := range r.Verbs {
				p := permission{r.APIGroups[0], r.Resources[0], v}
				one := row{name: kind + " " + p.String(), fails: p}
				set(&one, without(rules, p))
				rs = append(rs, one)
			}
		}
	}
	add("ClusterRole", f.clusterRole.Rules, func(r *row, rules []rbacv1.PolicyRule) {
		r.clusterRules, r.roleRules = rules, f.role.Rules
	})
	add("Role", f.role.Rules, func(r *row, rules []rbacv1.PolicyRule) {
		r.clusterRules, r.roleRules = f.clusterRole.Rules, rules
	})
	return rs
}

func TestRBAC_without_any_one_rule_or_verb_of_deploy_rbac_yaml_a_named_operation_fails(t *testing.T) {
	f := readRBAC(t)
	table := failures()
	granted := permissions(slices.Concat(f.clusterRole.Rules, f.role.Rules))
	for p := range table {
		require.Contains(t, granted, p, "the table names %s, which rbac.yaml doesn't grant", p)
	}
	for _, p := range granted {
		require.Contains(t, table, p, "rbac.yaml grants %s, and the table doesn't say what fails without it", p)
	}

	for _, r := range rows(t, f) {
		fail := table[r.fails]
		t.Run(r.name, func(t *testing.T) {
			if !fail.alone {
				t.Parallel()
			}
			t.Logf("without it: %s", fail.operation)
			o, kubeconfig := newOperator(t, f, r.clusterRules, r.roleRules)
			fail.check(t, o, func() { o.start(t, f, kubeconfig) })
		})
	}
}

func TestRBAC_the_docs_print_deploy_rbac_yaml_s_rules_but_for_Finalize_s_and_Budget_s(t *testing.T) {
	file, docs := readRBAC(t), docsRBAC(t)
	require.ElementsMatch(t, permissions(file.role.Rules), permissions(docs.role.Rules), "the Lease's Role")

	fileGrants, docsGrant := permissions(file.clusterRole.Rules), permissions(docs.clusterRole.Rules)
	var onlyDocs, onlyFile []permission
	for _, p := range docsGrant {
		if !slices.Contains(fileGrants, p) {
			onlyDocs = append(onlyDocs, p)
		}
	}
	for _, p := range fileGrants {
		if !slices.Contains(docsGrant, p) {
			onlyFile = append(onlyFile, p)
		}
	}
	group := memcached.Memcached.Group
	require.ElementsMatch(t, []permission{
		// The docs' controller has a Finalize, which patches the
		// Memcached; the operator has none.
		{group, "memcacheds", "patch"},
	}, onlyDocs, "what the docs grant and rbac.yaml doesn't")
	require.ElementsMatch(t, []permission{
		// Budget's: its Owns, and its applies.
		{policyv1.GroupName, "poddisruptionbudgets", "list"},
		{policyv1.GroupName, "poddisruptionbudgets", "watch"},
		{policyv1.GroupName, "poddisruptionbudgets", "patch"},
		{policyv1.GroupName, "poddisruptionbudgets", "create"},
	}, onlyFile, "what rbac.yaml grants and the docs don't")
}
