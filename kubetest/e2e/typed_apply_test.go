package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The typed-apply tests run a Parent controller whose Reconciler applies a
// Child, an object of another Resource of the test's, with
// Resource.Apply: no dynamic client and no map in the Reconciler. Both
// resources are in an API group of the test's own, named after its
// namespace, as the other tests' are.

type (
	// parentSpec is what a Parent declares of its Child.
	parentSpec struct {
		Size  int32  `json:"size"`
		Image string `json:"image,omitempty"`
	}
	// parentStatus is the generation of the Child the last reconcile
	// applied, always written.
	parentStatus struct {
		ChildGeneration int64 `json:"childGeneration"`
	}
	parentObject = kube.Object[parentSpec, parentStatus]

	// childSpec has a field of each kind the docs tell apart: written
	// whatever its value (size, paused), left out when zero (image with
	// omitempty, tier with omitzero), a map and a nil slice.
	childSpec struct {
		Size    int32             `json:"size"`
		Paused  bool              `json:"paused"`
		Image   string            `json:"image,omitempty"`
		Tier    string            `json:"tier,omitzero"`
		Options map[string]string `json:"options,omitempty"`
		Ports   []int32           `json:"ports"`
	}
	childStatus struct {
		Ready bool `json:"ready,omitempty"`
	}
	childObject = kube.Object[childSpec, childStatus]
)

// parentManager is the Parent controller's name, and so the field manager
// of its applies.
const parentManager = "parent-controller"

// typedResources are a test's Parent and Child resources, in group.
func typedResources(group string) (kube.Resource[parentSpec, parentStatus], kube.Resource[childSpec, childStatus]) {
	return kube.Resource[parentSpec, parentStatus]{Group: group, Version: "v1", Kind: "Parent", Plural: "parents", Scope: kube.Namespaced},
		kube.Resource[childSpec, childStatus]{Group: group, Version: "v1", Kind: "Child", Plural: "children", Scope: kube.Namespaced}
}

// typedGroup is the API group of a test's Parents and Children.
func typedGroup(ns string) string { return ns + ".typed.e2e.loam.dev" }

// installTyped installs the test's Parent and Child CRDs in ns's group and
// returns the resources.
func installTyped(t *testing.T, c *kubetest.Cluster, ns string) (kube.Resource[parentSpec, parentStatus], kube.Resource[childSpec, childStatus]) {
	t.Helper()
	parents, children := typedResources(typedGroup(ns))
	require.NoError(t, c.InstallCRDs(t.Context(), typedCRDs(t, parents, children)...))
	return parents, children
}

func typedCRDs(t *testing.T, parents kube.Resource[parentSpec, parentStatus], children kube.Resource[childSpec, childStatus]) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	p, err := parents.CRD()
	require.NoError(t, err)
	c, err := children.CRD()
	require.NoError(t, err)
	return []*apiextensionsv1.CustomResourceDefinition{p, c}
}

// parentReconciler applies each Parent's Child, controlled by the Parent,
// and reports the Child's generation. It records every error.
type parentReconciler struct {
	client   *kube.Client
	parents  kube.Resource[parentSpec, parentStatus]
	children kube.Resource[childSpec, childStatus]
	errs     *records[error]
}

func (r parentReconciler) Reconcile(ctx context.Context, p parentObject) (kube.Result[parentStatus], error) {
	child, err := r.children.Apply(ctx, r.client, childObject{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Spec:       childSpec{Size: p.Spec.Size, Image: p.Spec.Image},
	}, kube.ApplyOptions{FieldManager: parentManager, Owner: r.parents.Owner(p)})
	if err != nil {
		r.errs.add(err)
		return kube.Result[parentStatus]{}, err
	}
	return kube.Result[parentStatus]{Status: &parentStatus{ChildGeneration: child.Generation}}, nil
}

// parentController returns the Parent controller of ns, whose Reconciler
// records its errors in errs, with parts besides its Owns of Children.
func parentController(s *app.Setup, client *kube.Client, ns string, parents kube.Resource[parentSpec, parentStatus], children kube.Resource[childSpec, childStatus], errs *records[error], parts ...kube.Part) (*kube.Controller, error) {
	settings := settingsFor(parentManager, ns, "pod-0")
	settings.Namespace = ns
	rec := parentReconciler{client: client, parents: parents, children: children, errs: errs}
	return kube.NewController(s, client, settings, parents, rec, append([]kube.Part{kube.Owns(children.GVR())}, parts...)...)
}

// parentRules are the RBAC rules of the Parent controller, as
// docs/kubernetes.md writes them: its own, Owns', and the Reconciler's
// applies of Children.
func parentRules(group string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{"parents"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{group}, Resources: []string{"parents/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{group}, Resources: []string{"children"}, Verbs: []string{"list", "watch", "patch", "create"}},
	}
}

// typedObjects reaches a test's objects of one resource as the admin.
type typedObjects[Spec, Status any] struct {
	r       kube.Resource[Spec, Status]
	objects dynamic.ResourceInterface
}

func typedObjectsOf[Spec, Status any](t *testing.T, c *kubetest.Cluster, r kube.Resource[Spec, Status], ns string) typedObjects[Spec, Status] {
	t.Helper()
	return typedObjects[Spec, Status]{r: r, objects: adminClients(t, c).dynamic.Resource(r.GVR()).Namespace(ns)}
}

// create creates the object name of spec with annotations.
func (o typedObjects[Spec, Status]) create(t *testing.T, name string, spec Spec, annotations map[string]string) kube.Object[Spec, Status] {
	t.Helper()
	obj := kube.Object[Spec, Status]{
		TypeMeta:   metav1.TypeMeta{APIVersion: o.r.Group + "/" + o.r.Version, Kind: o.r.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec:       spec,
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&obj)
	require.NoError(t, err)
	delete(u, "status")
	created, err := o.objects.Create(t.Context(), &unstructured.Unstructured{Object: u}, metav1.CreateOptions{})
	require.NoError(t, err)
	return decodeTyped[Spec, Status](t, created)
}

// get returns the object name, and false when there is none.
func (o typedObjects[Spec, Status]) get(t *testing.T, name string) (kube.Object[Spec, Status], bool) {
	t.Helper()
	u, err := o.objects.Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return kube.Object[Spec, Status]{}, false
	}
	require.NoError(t, err)
	return decodeTyped[Spec, Status](t, u), true
}

// patch changes the object name with a JSON merge patch of patch, as a
// person's kubectl does, under the field manager "kubectl-patch".
func (o typedObjects[Spec, Status]) patch(t *testing.T, name string, patch map[string]any) {
	t.Helper()
	b, err := json.Marshal(patch)
	require.NoError(t, err)
	_, err = o.objects.Patch(t.Context(), name, types.MergePatchType, b, metav1.PatchOptions{FieldManager: "kubectl-patch"})
	require.NoError(t, err)
}

func decodeTyped[Spec, Status any](t *testing.T, u *unstructured.Unstructured) kube.Object[Spec, Status] {
	t.Helper()
	b, err := u.MarshalJSON()
	require.NoError(t, err)
	var obj kube.Object[Spec, Status]
	require.NoError(t, json.Unmarshal(b, &obj))
	return obj
}

// claimed returns the fields the field manager manager owns in obj, as
// dotted paths read from its managedFields: spec.size for "f:size" in
// "f:spec", and a list item or a map key as the API server writes it,
// such as metadata.ownerReferences.k:{"uid":"…"}. A field owned as a whole
// and its own fields are all listed.
func claimed(t *testing.T, obj metav1.Object, manager string) []string {
	t.Helper()
	var paths []string
	var walk func(prefix string, fields map[string]any)
	walk = func(prefix string, fields map[string]any) {
		for k, v := range fields {
			if k == "." {
				continue // the field itself, which prefix already names
			}
			p := strings.TrimPrefix(k, "f:")
			if prefix != "" {
				p = prefix + "." + p
			}
			paths = append(paths, p)
			if sub, ok := v.(map[string]any); ok {
				walk(p, sub)
			}
		}
	}
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager {
			continue
		}
		var fields map[string]any
		require.NoError(t, json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields))
		walk("", fields)
	}
	slices.Sort(paths)
	return paths
}

// typedClient returns a Client of c as its admin, outside any App, whose
// connections close when the test ends.
func typedClient(t *testing.T, c *kubetest.Cluster) *kube.Client {
	t.Helper()
	client, err := kube.NewClient(&app.Setup{Host: app.OSHost(), Telemetry: apptest.NewTelemetry().Telemetry}, c.Connection())
	require.NoError(t, err)
	t.Cleanup(func() {
		if tr, ok := client.RoundTripper().(interface{ CloseIdleConnections() }); ok {
			tr.CloseIdleConnections()
		}
	})
	return client
}

// TestTypedApply_claims_what_encoding_json_writes applies Children under
// two field managers, outside any controller, and reads what each owns
// from the managedFields the API server keeps, as docs/kubernetes.md says
// it: a field encoding/json writes is claimed and set whatever its value,
// one it leaves out isn't, and one a manager stops writing is removed
// unless another owns it.
func TestTypedApply_claims_what_encoding_json_writes(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	_, children := installTyped(t, c, ns)
	client := typedClient(t, c)
	apply := func(manager string, spec childSpec) childObject {
		t.Helper()
		got, err := children.Apply(t.Context(), client, childObject{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns}, Spec: spec},
			kube.ApplyOptions{FieldManager: manager})
		require.NoError(t, err)
		return got
	}
	written := []string{"spec", "spec.paused", "spec.ports", "spec.size"}

	// The zero size, the false paused and the nil ports are written, so
	// claimed and set; the empty image, tier and options are left out.
	got := apply("a", childSpec{})
	require.Equal(t, written, claimed(t, &got, "a"))
	require.Equal(t, childSpec{}, got.Spec)
	require.Equal(t, int64(1), got.Generation)

	// A second manager of the same type writes the same fields, so it
	// owns them too, beside the ones it sets; and, forcing, it takes over
	// a field whose value it changes.
	got = apply("b", childSpec{Size: 5, Tier: "gold", Options: map[string]string{"x": "1"}})
	require.Equal(t, []string{"spec", "spec.options", "spec.options.x", "spec.paused", "spec.ports", "spec.size", "spec.tier"}, claimed(t, &got, "b"))
	require.Equal(t, []string{"spec", "spec.paused", "spec.ports"}, claimed(t, &got, "a"), "a lost the size to b's force")
	require.Equal(t, childSpec{Size: 5, Tier: "gold", Options: map[string]string{"x": "1"}}, got.Spec)

	// A zero size is a value: applied, it is set, and taken back. The
	// fields a leaves out stay as b set them.
	got = apply("a", childSpec{Image: "shop:1"})
	require.Equal(t, childSpec{Image: "shop:1", Tier: "gold", Options: map[string]string{"x": "1"}}, got.Spec)
	require.Equal(t, []string{"spec", "spec.image", "spec.paused", "spec.ports", "spec.size"}, claimed(t, &got, "a"))

	// The image a claimed, left zero, is no longer written: no one else
	// owns it, so it is removed. The tier b owns stays, though a never
	// wrote it.
	got = apply("a", childSpec{})
	require.Equal(t, childSpec{Tier: "gold", Options: map[string]string{"x": "1"}}, got.Spec)
	require.Equal(t, written, claimed(t, &got, "a"))
	require.Empty(t, got.OwnerReferences)
}

// TestTypedApply_a_Reconciler_applies_a_child_it_controls runs the Parent
// controller as a ServiceAccount holding exactly the docs' rules: it
// creates the Child its Parent controls, with the owner reference Owns
// and the garbage collector follow, changes it when the Parent changes,
// and takes back a field a person changed, since it forces.
func TestTypedApply_a_Reconciler_applies_a_child_it_controls(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	parents, children := installTyped(t, c, ns)
	conn := grant(t, c, ns, parentManager, parentRules(parents.Group), ns, parents.GVR(), children.GVR())
	errs := &records[error]{}
	a := startController(t, conn, func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return parentController(s, client, ns, parents, children, errs)
	})
	ps, cs := typedObjectsOf(t, c, parents, ns), typedObjectsOf(t, c, children, ns)

	p := ps.create(t, "shop", parentSpec{Size: 2, Image: "shop:1"}, nil)
	var child childObject
	wait.For(t, time.Minute, func() bool {
		var ok bool
		child, ok = cs.get(t, "shop")
		return ok
	}, "the Child was never applied", a)
	require.Equal(t, []metav1.OwnerReference{{
		APIVersion: parents.Group + "/v1", Kind: "Parent", Name: "shop", UID: p.UID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}}, child.OwnerReferences)
	require.Equal(t, childSpec{Size: 2, Image: "shop:1"}, child.Spec)
	// The owner reference is an item of a list keyed by uid, owned whole.
	ownerRef := []string{"metadata", "metadata.ownerReferences", `metadata.ownerReferences.k:{"uid":"` + string(p.UID) + `"}`}
	require.Equal(t, slices.Sorted(slices.Values(append([]string{"spec", "spec.image", "spec.paused", "spec.ports", "spec.size"}, ownerRef...))),
		claimed(t, &child, parentManager))
	// The Reconciler reports the generation of the Child it applied, as
	// Apply returned it.
	wait.For(t, time.Minute, func() bool {
		p, _ = ps.get(t, "shop")
		return p.Status.ChildGeneration == 1
	}, "the Parent never reported its Child's generation", a)

	// A changed Parent changes its Child: a size of 0 is written and set,
	// and the image, no longer written, is removed, as no other manager
	// owns it.
	ps.patch(t, "shop", map[string]any{"spec": map[string]any{"size": 0, "image": nil}})
	wait.For(t, time.Minute, func() bool {
		child, _ = cs.get(t, "shop")
		return child.Generation == 2
	}, "the Child was never changed", a)
	require.Equal(t, childSpec{}, child.Spec)
	require.Equal(t, slices.Sorted(slices.Values(append([]string{"spec", "spec.paused", "spec.ports", "spec.size"}, ownerRef...))),
		claimed(t, &child, parentManager))

	// A person's change to a field the controller owns is undone: Owns
	// reconciles the Parent, whose apply forces. A change to a field it
	// leaves out stays, the person's.
	cs.patch(t, "shop", map[string]any{"spec": map[string]any{"size": 7, "tier": "gold"}})
	wait.For(t, time.Minute, func() bool {
		child, _ = cs.get(t, "shop")
		return child.Generation == 4
	}, "the person's change was never undone", a)
	require.Equal(t, childSpec{Tier: "gold"}, child.Spec)
	require.Equal(t, []string{"spec", "spec.tier"}, claimed(t, &child, "kubectl-patch"))
	require.Empty(t, errs.from(0))
	require.Equal(t, 0, a.Stop())
}

// TestTypedApply_the_garbage_collector_deletes_the_child_after_its_parent
// runs the Parent controller against a cluster of its own that runs the
// garbage collector, which the shared one doesn't, with the CRDs installed
// as it starts, so the collector knows them at once.
func TestTypedApply_the_garbage_collector_deletes_the_child_after_its_parent(t *testing.T) {
	t.Parallel()
	parents, children := typedResources("typed.e2e.loam.dev")
	c := kubetest.Start(t, kubetest.WithControllerManager(), kubetest.WithCRDs(typedCRDs(t, parents, children)...))
	ns := c.Namespace(t)
	errs := &records[error]{}
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		return parentController(s, client, ns, parents, children, errs)
	})
	ps, cs := typedObjectsOf(t, c, parents, ns), typedObjectsOf(t, c, children, ns)

	ps.create(t, "shop", parentSpec{Size: 1}, nil)
	wait.For(t, time.Minute, func() bool {
		_, ok := cs.get(t, "shop")
		return ok
	}, "the Child was never applied", a)
	require.NoError(t, ps.objects.Delete(t.Context(), "shop", metav1.DeleteOptions{}))
	wait.For(t, time.Minute, func() bool {
		_, ok := cs.get(t, "shop")
		return !ok
	}, "the garbage collector never deleted the Child", a)
	require.Empty(t, errs.from(0))
	require.Equal(t, 0, a.Stop())
}

// TestTypedApply_a_child_carries_its_parent_s_scenario runs the Parent
// controller with failure injection and TrustScenario: the Child of a
// Parent whose annotation carries a scenario gets it, as a Deployment
// does, and loses it when the experiment ends; a scenario that aborts the
// Child's apply fails the Parent's reconciles, and no Child is applied.
func TestTypedApply_a_child_carries_its_parent_s_scenario(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	parents, children := installTyped(t, c, ns)
	codec := scenarioCodec(t)
	errs := &records[error]{}
	a := startExperiment(t, throughWire(t, c), codec, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		ctrl, err := parentController(s, client, ns, parents, children, errs, kube.TrustScenario(scenarioAnnotation, inNamespace(ns)))
		return []app.Service{ctrl}, err
	})
	ps, cs := typedObjectsOf(t, c, parents, ns), typedObjectsOf(t, c, children, ns)

	value := annotationValue(t, codec)
	ps.create(t, "shop", parentSpec{Size: 1}, map[string]string{scenarioAnnotation: value, "team.example.com/owner": "shop-team"})
	var child childObject
	wait.For(t, time.Minute, func() bool {
		var ok bool
		child, ok = cs.get(t, "shop")
		return ok && child.Annotations[scenarioAnnotation] == value
	}, "the Child never got the scenario", wait.App(a))
	require.Equal(t, map[string]string{scenarioAnnotation: value}, child.Annotations, "only the scenario goes on")
	require.Contains(t, claimed(t, &child, parentManager), "metadata.annotations."+scenarioAnnotation, "the controller's apply declares it")

	// Ending the experiment reconciles the Parent without a scenario; its
	// apply no longer declares the annotation, which the API server
	// removes.
	setScenario(t, ps.objects, "shop", nil)
	wait.For(t, time.Minute, func() bool {
		child, _ = cs.get(t, "shop")
		_, annotated := child.Annotations[scenarioAnnotation]
		return !annotated
	}, "the Child kept the scenario", wait.App(a))

	// An abort at the Children's point: the Parent's reconciles fail,
	// retried, and nothing reaches the API server.
	point := "kube:children." + parents.Group + ":patch"
	ps.create(t, "blocked", parentSpec{Size: 1}, map[string]string{
		scenarioAnnotation: annotationValue(t, codec, fit.Rule{Point: point, Fault: fit.Fault{Abort: true}}),
	})
	wait.For(t, time.Minute, func() bool { return abortsAt(a, point) >= 2 }, "the Child's apply was never aborted twice", wait.App(a))
	_, applied := cs.get(t, "blocked")
	require.False(t, applied, "an aborted apply sends nothing")
	require.NotEmpty(t, errs.from(0))
	for _, err := range errs.from(0) {
		var injected *fault.InjectedError
		require.ErrorAs(t, err, &injected)
		require.ErrorContains(t, err, `kube: apply of Child.`+parents.Group+` "`+ns+`/blocked": `)
	}
	require.Equal(t, 0, a.Stop())
}
