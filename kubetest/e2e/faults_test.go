package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// memcachedUnderTest returns the Memcached controller of r's objects in
// ns, under failure injection: it trusts the scenario on every Memcached
// in ns, and its Reconciler records its reconciles in log. parts are added
// to its Owns and TrustScenario.
func memcachedUnderTest(s *app.Setup, client *kube.Client, r kube.Resource[memcachedSpec, memcachedStatus], ns string, rec experimentReconciler, parts ...kube.Part) (*kube.Controller, error) {
	kc, err := kubernetes.NewForConfig(client.Config())
	if err != nil {
		return nil, err
	}
	rec.kube = kc
	return kube.NewController(s, client, experimentSettings("memcached-controller", ns), r, rec,
		append([]kube.Part{
			kube.Owns(deploymentsGVR),
			kube.TrustScenario(scenarioAnnotation, inNamespace(ns)),
		}, parts...)...)
}

func TestFaults_a_scenario_that_aborts_the_Deployment_s_apply_fails_reconciles_with_backoff_until_its_annotation_is_removed(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	a := startExperiment(t, throughWire(t, c), codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		ctrl, err := memcachedUnderTest(s, client, r, ns, experimentReconciler{log: log})
		return []app.Service{ctrl}, err
	})

	value := annotationValue(t, codec, fit.Rule{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}})
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})

	// Each reconcile fails, and the status apply, which the scenario
	// doesn't abort, shows why.
	wait.For(t, time.Minute, func() bool {
		cond := availableOf(t, admin.dynamic, r, ns, "cache")
		return cond != nil && cond.Reason == "ApplyFailed"
	}, "no ApplyFailed condition", wait.App(a))
	cond := availableOf(t, admin.dynamic, r, ns, "cache")
	require.Contains(t, cond.Message, `fault: injected abort at point "kube:deployments.apps:patch"`)

	// It is retried with backoff: the delays double from 5ms up to
	// RetryMaxDelay, which the last retries have reached, and every retry
	// meets the scenario again.
	wait.For(t, time.Minute, func() bool { return log.count("cache") >= 12 }, "not retried", wait.App(a))
	tries := log.of("cache")
	for _, try := range tries {
		require.Error(t, try.err, "every reconcile meets the scenario")
	}
	for i := len(tries) - 2; i < len(tries); i++ {
		gap := tries[i].at.Sub(tries[i-1].at)
		require.GreaterOrEqual(t, gap, experimentMaxDelay, "reconcile %d came %s after the one before: backed off to RetryMaxDelay", i, gap)
	}
	_, ok := getDeployment(t, admin.kube, ns, "cache")
	require.False(t, ok, "no apply of the Deployment got through")
	require.GreaterOrEqual(t, abortsAt(a, "kube:deployments.apps:patch"), 10, "each abort is an evaluation on the apply's span")

	// Removing the annotation ends the experiment: the next reconcile
	// applies the Deployment, and the retries stop.
	setScenario(t, memcacheds, "cache", nil)
	wait.For(t, time.Minute, func() bool { _, ok := getDeployment(t, admin.kube, ns, "cache"); return ok }, "no Deployment", wait.App(a))
	wait.For(t, time.Minute, func() bool {
		cond := availableOf(t, admin.dynamic, r, ns, "cache")
		return cond != nil && cond.Reason == "DeploymentPending"
	}, "the condition stays ApplyFailed", wait.App(a))
	// The retries stop: from the first reconcile that succeeds, none
	// fails again. A change made now bounds what the test reads: the
	// reconcile that reads it comes after those of every earlier write.
	changed := touch(t, memcacheds, "cache", "after-the-experiment")
	wait.For(t, time.Minute, func() bool { return log.saw("cache", changed) }, "the change after the experiment is never reconciled", wait.App(a))
	tries = log.of("cache")
	first := slices.IndexFunc(tries, func(e reconcileEntry) bool { return e.err == nil })
	require.GreaterOrEqual(t, first, 0, "no reconcile succeeded")
	for i, try := range tries[first:] {
		require.NoError(t, try.err, "reconcile %d, after reconcile %d succeeded", first+i, first)
	}
	d, _ := getDeployment(t, admin.kube, ns, "cache")
	require.NotContains(t, d.Annotations, scenarioAnnotation, "the reconcile that applied it carried no scenario")
	require.Equal(t, 0, a.Stop())
}

func TestFaults_a_scenario_that_aborts_the_finalizer_s_apply_keeps_the_finalizer_off_until_its_annotation_is_removed(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	const finalizer = "cache.example.com/backups"
	a := startExperiment(t, throughWire(t, c), codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		ctrl, err := memcachedUnderTest(s, client, r, ns, experimentReconciler{log: log},
			kube.Finalize(finalizer, func(context.Context, memcachedObject) error { return nil }))
		return []app.Service{ctrl}, err
	})

	point := "kube:memcacheds." + r.Group + ":patch"
	value := annotationValue(t, codec, fit.Rule{Point: point, Fault: fit.Fault{Abort: true}})
	created := createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})

	// The annotation is read before the finalizer is added, so every
	// attempt to add it is aborted, and retried.
	wait.For(t, time.Minute, func() bool { return abortsAt(a, point) >= 5 }, "the finalizer's apply was never aborted", wait.App(a))
	m, ok := getMemcached(t, admin.dynamic, r, ns, "cache")
	require.True(t, ok)
	require.NotContains(t, m.Finalizers, finalizer, "not added while the annotation stays")
	require.Zero(t, log.count("cache"), "the Reconciler waits for the finalizer")

	setScenario(t, memcacheds, "cache", nil)
	wait.For(t, time.Minute, func() bool {
		m, _ := getMemcached(t, admin.dynamic, r, ns, "cache")
		return len(m.Finalizers) == 1 && m.Finalizers[0] == finalizer
	}, "the finalizer was never added", wait.App(a))
	wait.For(t, time.Minute, func() bool { _, ok := getDeployment(t, admin.kube, ns, "cache"); return ok }, "never reconciled", wait.App(a))
	require.Equal(t, created.GetUID(), metav1.GetControllerOf(mustDeployment(t, admin.kube, ns, "cache")).UID)
	require.Equal(t, 0, a.Stop())
}

func mustDeployment(t *testing.T, k kubernetes.Interface, ns, name string) *appsv1.Deployment {
	t.Helper()
	d, ok := getDeployment(t, k, ns, name)
	require.True(t, ok, "no Deployment %s/%s", ns, name)
	return d
}

func TestFaults_a_scenario_of_no_rules_reaches_the_Deployment_and_leaves_it_with_the_owner_s_annotation(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	a := startExperiment(t, throughWire(t, c), codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		ctrl, err := memcachedUnderTest(s, client, r, ns, experimentReconciler{log: log})
		return []app.Service{ctrl}, err
	})

	value := annotationValue(t, codec)
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value, "team.example.com/owner": "cache-team"})

	// The Reconciler applies its Deployment as it always does; the Client
	// sets the annotation in the apply.
	wait.For(t, time.Minute, func() bool {
		d, ok := getDeployment(t, admin.kube, ns, "cache")
		return ok && d.Annotations[scenarioAnnotation] == value
	}, "the Deployment never got the scenario", wait.App(a))
	d := mustDeployment(t, admin.kube, ns, "cache")
	require.NotContains(t, d.Annotations, "team.example.com/owner", "only the scenario goes on")
	require.NotEmpty(t, log.of("cache"))
	for _, try := range log.of("cache") {
		require.NoError(t, try.err, "a scenario of no rules fails nothing")
	}

	// Removing the owner's annotation reconciles it without a scenario, and
	// its apply no longer declares the Deployment's: the API server removes
	// it.
	setScenario(t, memcacheds, "cache", nil)
	wait.For(t, time.Minute, func() bool {
		d, ok := getDeployment(t, admin.kube, ns, "cache")
		_, annotated := d.Annotations[scenarioAnnotation]
		return ok && !annotated
	}, "the Deployment kept the scenario", wait.App(a))
	require.Equal(t, 0, a.Stop())
}

// Deployments is Kubernetes' own Deployment kind, for the second
// controller of an operator.
var Deployments = kube.Kind[appsv1.Deployment]{
	GVR:   deploymentsGVR,
	Kind:  "Deployment",
	Scope: kube.Namespaced,
}

// memcachedChildOf returns a trust func that trusts an object a Memcached
// of group controls, as the spec's Budget controller trusts a Deployment.
func memcachedChildOf(group string) func(metav1.Object) bool {
	return func(obj metav1.Object) bool {
		owner := metav1.GetControllerOf(obj)
		return owner != nil && owner.Kind == "Memcached" && strings.HasPrefix(owner.APIVersion, group+"/")
	}
}

// budgetSeen records what the second controller's reconciles met at its
// own point, and the revision of the Deployment each read.
type budgetSeen struct {
	mu  sync.Mutex
	met []budgetMet
}

type budgetMet struct {
	fault    fit.Fault
	revision int64
}

func (b *budgetSeen) add(f fit.Fault, d appsv1.Deployment) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.met = append(b.met, budgetMet{fault: f, revision: revisionOf(d.ResourceVersion)})
}

// all returns what every reconcile met, in order.
func (b *budgetSeen) all() []budgetMet {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.met)
}

// last returns what the latest reconcile met.
func (b *budgetSeen) last() fit.Fault {
	all := b.all()
	if len(all) == 0 {
		return fit.Fault{}
	}
	return all[len(all)-1].fault
}

// saw reports whether a reconcile read the Deployment at revision or
// later.
func (b *budgetSeen) saw(revision int64) bool {
	return slices.ContainsFunc(b.all(), func(m budgetMet) bool { return m.revision >= revision })
}

func TestFaults_an_operator_of_two_controllers_carries_the_scenario_down_and_stops_carrying_it(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	log := &reconcileLog{}
	budgets := &budgetSeen{}
	const budgetPoint = "budget:poddisruptionbudget"
	a := startExperiment(t, throughWire(t, c), codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		memcached, err := memcachedUnderTest(s, client, r, ns, experimentReconciler{log: log})
		if err != nil {
			return nil, err
		}
		// The second controller evaluates a point of its own, where Budget
		// would apply its PodDisruptionBudget.
		budget, err := kube.NewKindController(s, client, experimentSettings("memcached-budget", ns), Deployments,
			kube.KindReconcilerFunc[appsv1.Deployment](func(ctx context.Context, d appsv1.Deployment) (time.Duration, error) {
				if memcachedChildOf(r.Group)(&d) {
					budgets.add(s.Faults.Eval(ctx, budgetPoint), d)
				}
				return 0, nil
			}),
			kube.TrustScenario(scenarioAnnotation, memcachedChildOf(r.Group)),
		)
		if err != nil {
			return nil, err
		}
		return []app.Service{memcached, budget}, nil
	})

	value := annotationValue(t, codec, fit.Rule{Point: budgetPoint, Fault: fit.Fault{Abort: true}})
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})

	// The Memcached's reconcile applies the Deployment with the scenario;
	// the Deployment's controller trusts it, and its reconciles carry it.
	wait.For(t, time.Minute, func() bool {
		return budgets.last().Abort
	}, "the Deployment's reconciles never carried the scenario", wait.App(a))
	require.Equal(t, value, mustDeployment(t, admin.kube, ns, "cache").Annotations[scenarioAnnotation])
	for _, try := range log.of("cache") {
		require.NoError(t, try.err, "the scenario spares the Memcached's own reconciles")
	}

	// Ending the experiment on the Memcached ends it all the way down.
	setScenario(t, memcacheds, "cache", nil)
	wait.For(t, time.Minute, func() bool {
		return !budgets.last().Abort
	}, "the Deployment's reconciles still carry the scenario", wait.App(a))
	_, annotated := mustDeployment(t, admin.kube, ns, "cache").Annotations[scenarioAnnotation]
	require.False(t, annotated)
	// It stays ended: from the first reconcile of the Deployment without
	// the scenario, none meets it again, up to the reconcile of a change
	// made now, which comes after those of every earlier write.
	changed := touch(t, admin.dynamic.Resource(deploymentsGVR).Namespace(ns), "cache", "after-the-experiment")
	wait.For(t, time.Minute, func() bool { return budgets.saw(changed) }, "the Deployment's change is never reconciled", wait.App(a))
	met := budgets.all()
	first := slices.IndexFunc(met, func(m budgetMet) bool { return !m.fault.Abort })
	require.GreaterOrEqual(t, first, 0)
	for i, m := range met[first:] {
		require.False(t, m.fault.Abort, "reconcile %d of the Deployment, after reconcile %d met no scenario", first+i, first)
	}
	require.Equal(t, 0, a.Stop())
}

func TestFaults_the_API_server_never_receives_the_scenario_s_baggage(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	memcacheds := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	codec := scenarioCodec(t)
	w, conn := startWire(t, c)
	team, err := baggage.NewMemberRaw("team", "cache")
	require.NoError(t, err)
	log := &reconcileLog{}
	a := startExperiment(t, conn, codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		ctrl, err := memcachedUnderTest(s, client, r, ns, experimentReconciler{log: log, member: &team})
		return []app.Service{ctrl}, err
	})

	// A scenario whose rule nothing meets, so the reconciles go as they
	// would without it, each with the scenario in its context.
	value := annotationValue(t, codec, fit.Rule{Point: "kube:secrets:get", Fault: fit.Fault{Abort: true}})
	createWith(t, memcacheds, r, ns, "cache", nil, map[string]string{scenarioAnnotation: value})
	wait.For(t, time.Minute, func() bool {
		d, ok := getDeployment(t, admin.kube, ns, "cache")
		return ok && d.Annotations[scenarioAnnotation] == value
	}, "the Deployment never got the scenario", wait.App(a))
	wait.For(t, time.Minute, func() bool { return availableOf(t, admin.dynamic, r, ns, "cache") != nil }, "no status", wait.App(a))
	require.Equal(t, 0, a.Stop())

	// The scenario was in the requests' contexts, and the Client stripped it
	// from each.
	require.NotZero(t, events(a, fault.StripEvent), "no request carried the scenario to the Client")
	all := w.all()
	require.NotEmpty(t, all)
	for _, req := range all {
		for _, b := range req.baggage {
			require.NotContains(t, b, scenarioMember, "%s %s carried the scenario to the API server", req.method, req.path)
		}
	}

	// The Deployment's apply kept the Reconciler's own member in its
	// header, and carried the scenario in its body, as the child's
	// annotation.
	applies := w.patchesOf("/namespaces/" + ns + "/deployments/cache")
	require.NotEmpty(t, applies)
	var sawTeam bool
	for _, apply := range applies {
		require.Equal(t, "application/apply-patch+yaml", apply.contentType)
		var body unstructured.Unstructured
		require.NoError(t, json.Unmarshal(apply.body, &body.Object), "the apply is sent as JSON")
		require.Equal(t, value, body.GetAnnotations()[scenarioAnnotation])
		sawTeam = sawTeam || strings.Contains(strings.Join(apply.baggage, ","), "team=cache")
	}
	require.True(t, sawTeam, "the Reconciler's own baggage reaches the API server")
	statuses := w.patchesOf("/namespaces/" + ns + "/memcacheds/cache/status")
	require.NotEmpty(t, statuses, "the controller's status apply went through the proxy too")
	for _, s := range statuses {
		require.NotContains(t, string(s.body), scenarioAnnotation, "the object's own status apply is left alone")
	}
	require.True(t, hasRequest(all, http.MethodGet, "/apis/"+r.Group+"/v1alpha1/namespaces/"+ns+"/memcacheds"), "the informer's list went through the proxy too")
}

// hasRequest reports whether requests has one of method to path.
func hasRequest(requests []wireRequest, method, path string) bool {
	for _, r := range requests {
		if r.method == method && r.path == path {
			return true
		}
	}
	return false
}

// scenarioPolicy is the spec's ValidatingAdmissionPolicy and its binding,
// for a test's own Memcached group, harness and guarded namespace: only
// the harness may set or change the annotation on a Memcached there.
const scenarioPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: %[1]s
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: ["%[2]s"]
        apiVersions: ["*"]
        operations: ["CREATE", "UPDATE"]
        resources: ["memcacheds"]
  variables:
    - name: key
      expression: "'%[3]s'"
    - name: scenario
      expression: >-
        has(object.metadata.annotations) && variables.key in object.metadata.annotations
        ? object.metadata.annotations[variables.key] : ''
    - name: oldScenario
      expression: >-
        oldObject != null && has(oldObject.metadata.annotations) && variables.key in oldObject.metadata.annotations
        ? oldObject.metadata.annotations[variables.key] : ''
  validations:
    - expression: >-
        variables.scenario == variables.oldScenario ||
        request.userInfo.username == '%[4]s'
      message: only the chaos harness sets %[3]s
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: %[1]s
spec:
  policyName: %[1]s
  validationActions: ["Deny"]
  matchResources:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: %[5]s
`

// installScenarioPolicy creates the spec's policy for r's Memcacheds in ns,
// letting only harness, a user name, set the annotation, and removes it
// when the test ends.
func installScenarioPolicy(t *testing.T, admin kubernetes.Interface, r kube.Resource[memcachedSpec, memcachedStatus], ns, harness string) {
	t.Helper()
	name := ns + "-failure-scenario"
	doc := fmt.Sprintf(scenarioPolicy, name, r.Group, scenarioAnnotation, harness, ns)
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(doc), 4096)
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	require.NoError(t, dec.Decode(&policy))
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	require.NoError(t, dec.Decode(&binding))

	api := admin.AdmissionregistrationV1()
	_, err := api.ValidatingAdmissionPolicies().Create(t.Context(), &policy, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)
	_, err = api.ValidatingAdmissionPolicyBindings().Create(t.Context(), &binding, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// memcachedsAs returns the Memcacheds of ns as the ServiceAccount ns/name,
// which may create and change them.
func memcachedsAs(t *testing.T, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string) dynamic.ResourceInterface {
	t.Helper()
	c := cluster.Cluster(t)
	token, err := c.ServiceAccountToken(t.Context(), ns, name)
	require.NoError(t, err)
	d, err := dynamic.NewForConfig(c.RESTConfigForToken(token))
	require.NoError(t, err)
	return d.Resource(r.GVR()).Namespace(ns)
}

func TestFaults_the_spec_s_admission_policy_lets_only_the_harness_set_the_annotation(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	r := installMemcached(t, c, ns)
	admin := adminClients(t, c)
	codec := scenarioCodec(t)

	// Two ServiceAccounts may write Memcacheds in ns: the chaos harness,
	// and a user who isn't it.
	_, err := admin.kube.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "memcached-editor"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{r.Group}, Resources: []string{"memcacheds"},
			Verbs: []string{"get", "list", "create", "update", "patch"},
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.kube.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "memcached-editors"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "memcached-editor"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "harness"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "developer"},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	harness := memcachedsAs(t, r, ns, "harness")
	developer := memcachedsAs(t, r, ns, "developer")
	installScenarioPolicy(t, admin.kube, r, ns, "system:serviceaccount:"+ns+":harness")

	value := annotationValue(t, codec, fit.Rule{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}})
	scenario := func(value any) []byte {
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{scenarioAnnotation: value}}})
		require.NoError(t, err)
		return b
	}
	// RBAC and the policy take effect a moment after they are created;
	// each try sets a value of its own, so the policy has a change to judge.
	createWith(t, admin.dynamic.Resource(r.GVR()).Namespace(ns), r, ns, "cache", nil, nil)
	var denied error
	try := 0
	wait.For(t, time.Minute, func() bool {
		try++
		_, denied = developer.Patch(t.Context(), "cache", types.MergePatchType, scenario(fmt.Sprintf("try-%d", try)), metav1.PatchOptions{})
		return denied != nil && strings.Contains(denied.Error(), "only the chaos harness")
	}, "the developer's annotation was never denied", wait.LastSeen(func() string { return fmt.Sprintf("the last try returned %v", denied) }))
	require.ErrorContains(t, denied, "only the chaos harness sets "+scenarioAnnotation)

	// The harness starts and ends the experiment.
	_, err = harness.Patch(t.Context(), "cache", types.MergePatchType, scenario(value), metav1.PatchOptions{})
	require.NoError(t, err)
	u, err := harness.Get(t.Context(), "cache", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, value, u.GetAnnotations()[scenarioAnnotation])

	// The developer can neither change nor remove it, nor create a
	// Memcached with one, but may change everything else.
	for what, patch := range map[string][]byte{
		"change": scenario("acme.fault={}"),
		"remove": scenario(nil),
	} {
		_, err = developer.Patch(t.Context(), "cache", types.MergePatchType, patch, metav1.PatchOptions{})
		require.ErrorContains(t, err, "only the chaos harness sets", what)
	}
	_, err = developer.Patch(t.Context(), "cache", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{})
	require.NoError(t, err, "a change that leaves the annotation alone is allowed")
	_, err = developer.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": r.Group + "/" + r.Version, "kind": r.Kind,
		"metadata": map[string]any{"name": "sneaky", "annotations": map[string]any{scenarioAnnotation: value}},
		"spec":     map[string]any{"size": int64(1)},
	}}, metav1.CreateOptions{})
	require.ErrorContains(t, err, "only the chaos harness sets")

	_, err = harness.Patch(t.Context(), "cache", types.MergePatchType, scenario(nil), metav1.PatchOptions{})
	require.NoError(t, err, "the harness ends the experiment")
}
