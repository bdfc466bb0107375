package kube_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/internal/reconciled"
	"github.com/loam-dev/loam/kube"
)

// The tests in this file apply objects to a stand-in for the API server,
// which records what each request carries. What the API server then does
// with an apply — the fields it gives the field manager, the owner
// reference the garbage collector follows — is tested against a real one
// in kubetest/e2e.

type (
	// childSpec holds a field of each kind an apply treats apart.
	childSpec struct {
		Size    int32             `json:"size"`
		Image   string            `json:"image,omitempty"`
		Paused  bool              `json:"paused"`
		Tier    string            `json:"tier,omitzero"`
		Ports   []int32           `json:"ports"`
		Options map[string]string `json:"options,omitempty"`
	}
	childStatus struct {
		Ready bool `json:"ready"`
	}
	childObject = kube.Object[childSpec, childStatus]
)

var (
	children = kube.Resource[childSpec, childStatus]{
		Group: "example.com", Version: "v1", Kind: "Child", Plural: "children", Scope: kube.Namespaced,
	}
	clusterChildren = kube.Resource[childSpec, childStatus]{
		Group: "example.com", Version: "v1", Kind: "ClusterChild", Plural: "clusterchildren", Scope: kube.Cluster,
	}
	parents = kube.Resource[childSpec, childStatus]{
		Group: "example.com", Version: "v1alpha1", Kind: "Parent", Plural: "parents", Scope: kube.Namespaced,
	}
)

// sentApply is what the stand-in was sent.
type sentApply struct {
	method, path, query, contentType string
	body                             []byte
}

// applyServer is the stand-in: it answers each request with answer, or
// with the object it was sent when answer is empty, and records what it
// was sent.
type applyServer struct {
	answer struct {
		code int
		body string
	}

	mu   sync.Mutex
	sent []sentApply
}

func (a *applyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.sent = append(a.sent, sentApply{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), body})
	code, answer := a.answer.code, a.answer.body
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if code == 0 {
		code, answer = http.StatusOK, stored(body)
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, answer)
}

// stored returns body, an apply's, as the API server stores the object:
// with its uid, resourceVersion, managedFields and a status.
func stored(body []byte) string {
	var o map[string]any
	if json.Unmarshal(body, &o) != nil {
		return "{}"
	}
	md, _ := o["metadata"].(map[string]any)
	md["uid"], md["resourceVersion"] = "child-uid", "7"
	md["managedFields"] = []any{map[string]any{"manager": "parent-controller", "operation": "Apply"}}
	o["status"] = map[string]any{"ready": true}
	b, _ := json.Marshal(o)
	return string(b)
}

func (a *applyServer) requests() []sentApply {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]sentApply(nil), a.sent...)
}

// startApplyServer serves a on a new Host at api.test:443 and returns a
// Client of it on s's Host, with s's faults, or a new Setup's when s is
// nil. Call it inside a synctest bubble.
func startApplyServer(t *testing.T, a *applyServer, faults *fault.Injector) *kube.Client {
	t.Helper()
	h, ca := apptest.NewHost(t), apptest.NewCA(t)
	ln, err := h.Listen(t.Context(), "tcp", "api.test:443")
	require.NoError(t, err)
	srv := &http.Server{Handler: a, TLSConfig: ca.ServerConfig("api.test"), ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeTLS(ln, "", "")
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	s := &app.Setup{Host: h.Host(), Telemetry: apptest.NewTelemetry().Telemetry, Faults: faults}
	return newClient(t, s, kube.Connection{Server: "api.test:443", TLS: &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}})
}

// parent is a Parent as a Reconciler is handed it.
func parent() childObject {
	return childObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1alpha1", Kind: "Parent"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "parent-uid"},
	}
}

func TestResource_Apply_sends_what_it_declares_and_nothing_else(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &applyServer{}
		c := startApplyServer(t, api, nil)
		other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid"}
		refs := make([]metav1.OwnerReference, 1, 4) // room for Apply to append into, if it did
		refs[0] = other
		obj := childObject{
			// Read back from an earlier apply: every field the API server
			// set, and a status, are there to be left out.
			TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Child"},
			ObjectMeta: metav1.ObjectMeta{
				Name: "c", Namespace: "ns", Labels: map[string]string{"app": "c"},
				Annotations: map[string]string{"note": "x"}, Finalizers: []string{"example.com/f"},
				OwnerReferences: refs,
				UID:             "child-uid", ResourceVersion: "6", Generation: 2,
				CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
				ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "someone"}},
			},
			Spec:   childSpec{Size: 0, Image: "", Paused: false, Tier: "", Ports: nil},
			Status: childStatus{Ready: true},
		}

		got, err := children.Apply(t.Context(), c, obj, kube.ApplyOptions{FieldManager: "parent-controller", Owner: parents.Owner(parent())})
		require.NoError(t, err)

		sent := api.requests()
		require.Len(t, sent, 1)
		require.Equal(t, http.MethodPatch, sent[0].method)
		require.Equal(t, "/apis/example.com/v1/namespaces/ns/children/c", sent[0].path)
		require.Equal(t, "fieldManager=parent-controller&force=true", sent[0].query)
		require.Equal(t, "application/apply-patch+yaml", sent[0].contentType)
		// The zero size and paused, and the nil ports, are written, so
		// claimed; the empty image, tier and options aren't.
		require.JSONEq(t, `{
			"apiVersion": "example.com/v1", "kind": "Child",
			"metadata": {
				"name": "c", "namespace": "ns", "labels": {"app": "c"}, "annotations": {"note": "x"},
				"ownerReferences": [
					{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-uid"},
					{"apiVersion": "example.com/v1alpha1", "kind": "Parent", "name": "p", "uid": "parent-uid", "controller": true, "blockOwnerDeletion": true}
				],
				"finalizers": ["example.com/f"]
			},
			"spec": {"size": 0, "paused": false, "ports": null}
		}`, string(sent[0].body))
		require.Equal(t, []metav1.OwnerReference{other}, obj.OwnerReferences, "the object's own references are left as they were")
		require.Equal(t, other, refs[:2][0], "and their array too")
		require.Zero(t, refs[:2][1], "and their array too")

		// The object as the API server stored it.
		require.Equal(t, types.UID("child-uid"), got.UID)
		require.Equal(t, "7", got.ResourceVersion)
		require.Equal(t, "parent-controller", got.ManagedFields[0].Manager)
		require.True(t, got.Status.Ready)
		require.Equal(t, "Child", got.Kind)
	})
}

func TestResource_Apply_a_cluster_scoped_object_and_one_of_no_owner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &applyServer{}
		c := startApplyServer(t, api, nil)
		_, err := clusterChildren.Apply(t.Context(), c, childObject{ObjectMeta: metav1.ObjectMeta{Name: "cc"}, Spec: childSpec{Size: 2}},
			kube.ApplyOptions{FieldManager: "parent-controller"})
		require.NoError(t, err)
		sent := api.requests()
		require.Len(t, sent, 1)
		require.Equal(t, "/apis/example.com/v1/clusterchildren/cc", sent[0].path)
		require.JSONEq(t, `{"apiVersion":"example.com/v1","kind":"ClusterChild","metadata":{"name":"cc"},"spec":{"size":2,"paused":false,"ports":null}}`, string(sent[0].body))
	})
}

func TestResource_Apply_returns_the_API_server_s_error_naming_the_object(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &applyServer{}
		api.answer.code = http.StatusForbidden
		api.answer.body = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,` +
			`"message":"children.example.com \"c\" is forbidden: User \"system:serviceaccount:ns:parent\" cannot patch resource \"children\""}`
		c := startApplyServer(t, api, nil)
		_, err := children.Apply(t.Context(), c, childObject{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}},
			kube.ApplyOptions{FieldManager: "parent-controller"})
		require.True(t, apierrors.IsForbidden(err), "%v", err)
		require.EqualError(t, err, `kube: apply of Child.example.com "ns/c": children.example.com "c" is forbidden: User "system:serviceaccount:ns:parent" cannot patch resource "children"`)
	})
}

func TestResource_Apply_reports_every_mistake_at_once_and_sends_nothing(t *testing.T) {
	type unencodable struct {
		Size  int32     `json:"size"`
		Ratio complex64 `json:"ratio"`
	}
	named := childObject{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	manager := kube.ApplyOptions{FieldManager: "parent-controller"}
	withOwner := func(o kube.Owner) kube.ApplyOptions {
		return kube.ApplyOptions{FieldManager: "parent-controller", Owner: o}
	}
	owner := parents.Owner(parent())
	controlled := named
	controlled.OwnerReferences = []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "cm-uid", Controller: new(true)},
		{APIVersion: "example.com/v1alpha1", Kind: "Parent", Name: "p", UID: "parent-uid"},
	}

	tests := []struct {
		name  string
		apply func(context.Context, *kube.Client) error
		want  []string
		lines int // one a mistake
	}{
		{
			name: "nothing at all", lines: 8,
			apply: func(ctx context.Context, _ *kube.Client) error {
				_, err := kube.Resource[childSpec, childStatus]{}.Apply(ctx, nil, childObject{}, kube.ApplyOptions{})
				return err
			},
			want: []string{
				`kube: apply of kube.Resource[github.com/loam-dev/loam/kube_test.childSpec,github.com/loam-dev/loam/kube_test.childStatus] "": the Resource: the Group is missing`,
				"the Version is missing", "the Kind is missing", "the Plural is missing",
				`the Scope "" is neither Namespaced nor Cluster`,
				"the Client is nil",
				"the object has no name: an apply names the object it creates or changes",
				"ApplyOptions.FieldManager is empty",
			},
		},
		{
			name: "no namespace, a bad name and a bad field manager", lines: 4,
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := children.Apply(ctx, c, childObject{ObjectMeta: metav1.ObjectMeta{Name: "a/b"}},
					kube.ApplyOptions{FieldManager: "parent\ncontroller" + strings.Repeat("x", 128)})
				return err
			},
			want: []string{
				`kube: apply of Child.example.com "a/b": the object's name "a/b" is no path segment: may not contain '/'`,
				`kube: apply of Child.example.com "a/b": the object has no namespace, and Child is namespaced`,
				`ApplyOptions.FieldManager: Too long: may not be more than 128 bytes`,
				`ApplyOptions.FieldManager: Invalid value: "parent\ncontroller`,
			},
		},
		{
			name: "a namespace on a cluster-scoped object, and another resource's apiVersion and kind", lines: 4,
			apply: func(ctx context.Context, c *kube.Client) error {
				obj := childObject{
					TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v2", Kind: "Child"},
					ObjectMeta: metav1.ObjectMeta{Name: "cc", Namespace: ".."},
				}
				_, err := clusterChildren.Apply(ctx, c, obj, manager)
				return err
			},
			want: []string{
				`kube: apply of ClusterChild.example.com "../cc": the object's namespace ".." is no path segment: may not be '..'`,
				`the object is in the namespace "..", and ClusterChild is cluster-scoped: want none`,
				`the object's apiVersion is "example.com/v2", and ClusterChild's is "example.com/v1"`,
				`the object's kind is "Child", and ClusterChild's is "ClusterChild"`,
			},
		},
		{
			name: "an owner without a uid, name or kind", lines: 4,
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := children.Apply(ctx, c, named, withOwner(kube.Owner{APIVersion: "a/b/c", Namespace: "ns"}))
				return err
			},
			want: []string{
				`kube: apply of Child.example.com "ns/c": the Owner's APIVersion: unexpected GroupVersion string: a/b/c`,
				"the Owner has no Kind", "the Owner has no Name", "the Owner has no UID",
			},
		},
		{
			name: "an owner of no object, and an owner with no APIVersion", lines: 3,
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err1 := children.Apply(ctx, c, named, withOwner(kube.OwnerOf(nil, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})))
				_, err2 := children.Apply(ctx, c, named, withOwner(kube.Owner{Kind: "Parent", Name: "p", UID: "u"}))
				return errors.Join(err1, err2)
			},
			want: []string{"the Owner has no Name", "the Owner has no UID", "the Owner has no APIVersion"},
		},
		{
			name: "an owner in another namespace", lines: 1,
			apply: func(ctx context.Context, c *kube.Client) error {
				o := parent()
				o.Namespace = "other"
				_, err := children.Apply(ctx, c, named, withOwner(parents.Owner(o)))
				return err
			},
			want: []string{`the Owner is in the namespace "other", and the object in "ns": an owner reference names an object in the object's own namespace, so the garbage collector would find no Owner and delete the object`},
		},
		{
			name: "a namespaced owner of a cluster-scoped object", lines: 1,
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := clusterChildren.Apply(ctx, c, childObject{ObjectMeta: metav1.ObjectMeta{Name: "cc"}}, withOwner(owner))
				return err
			},
			want: []string{`the Owner is in the namespace "ns", and ClusterChild is cluster-scoped: a cluster-scoped object's owner is cluster-scoped too, or the garbage collector never resolves it`},
		},
		{
			name: "an owner beside a controller reference, and one naming it already", lines: 2,
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := children.Apply(ctx, c, controlled, withOwner(owner))
				return err
			},
			want: []string{
				`the object's ownerReferences[0] is a controller reference already, to ConfigMap "cm", and an object has one controller`,
				`the object's ownerReferences[1] names the Owner already`,
			},
		},
		{
			name: "a spec encoding/json can't encode", lines: 3,
			apply: func(ctx context.Context, c *kube.Client) error {
				r := kube.Resource[unencodable, childStatus]{Group: "example.com", Version: "v1", Kind: "Odd", Plural: "odds", Scope: kube.Namespaced}
				_, err := r.Apply(ctx, c, kube.Object[unencodable, childStatus]{ObjectMeta: metav1.ObjectMeta{Name: "o"}}, kube.ApplyOptions{})
				return err
			},
			want: []string{
				`kube: apply of Odd.example.com "o": the object has no namespace`,
				"ApplyOptions.FieldManager is empty",
				"encoding the object: json: unsupported type: complex64",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &applyServer{}
				c := startApplyServer(t, api, nil)
				err := tt.apply(t.Context(), c)
				require.Error(t, err)
				for _, want := range tt.want {
					require.ErrorContains(t, err, want)
				}
				require.Len(t, strings.Split(err.Error(), "\n"), tt.lines, "one line a mistake: %v", err)
				require.Empty(t, api.requests(), "nothing is sent")
			})
		})
	}
}

func TestOwners_name_the_owning_object_with_its_resource_s_group_version_and_kind(t *testing.T) {
	p := parent()
	p.APIVersion, p.Kind = "", "" // as a test builds one: the Resource says
	namespaces := kube.Kind[corev1.Namespace]{GVR: corev1.SchemeGroupVersion.WithResource("namespaces"), Kind: "Namespace", Scope: kube.Cluster}
	ns := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "ns-uid"}}
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	var none *corev1.ConfigMap

	require.Equal(t, kube.Owner{APIVersion: "example.com/v1alpha1", Kind: "Parent", Name: "p", UID: "parent-uid", Namespace: "ns"}, parents.Owner(p))
	require.Equal(t, kube.Owner{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: "ns-uid"}, namespaces.Owner(ns))
	require.Equal(t, kube.Owner{APIVersion: "apps/v1", Kind: "Deployment", Name: "team", UID: "ns-uid"}, kube.OwnerOf(&ns, deployment))
	require.Equal(t, kube.Owner{APIVersion: "apps/v1", Kind: "Deployment"}, kube.OwnerOf(none, deployment), "a nil object, without a panic")
	require.True(t, kube.Owner{}.IsZero())
	require.False(t, parents.Owner(p).IsZero())
}

func TestResource_Apply_carries_a_reconcile_s_scenario_on_to_its_child(t *testing.T) {
	codec, err := jsonscenario.New("acme.fault")
	require.NoError(t, err)
	faults, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(t, err)
	const annotation = "acme.example.com/failure-scenario"
	// reconcileOf is the context of a reconcile of the parent that carries
	// rules, as TrustScenario makes it.
	reconcileOf := func(t *testing.T, rules ...fit.Rule) context.Context {
		ctx, err := fit.ContextWithScenario(t.Context(), codec, fit.Scenario{Rules: rules})
		require.NoError(t, err)
		return reconciled.WithObject(ctx, "parent-uid", annotation, baggage.FromContext(ctx))
	}
	child := childObject{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", Annotations: map[string]string{"note": "x"}}}
	owned := kube.ApplyOptions{FieldManager: "parent-controller", Owner: parents.Owner(parent())}

	t.Run("the child of the reconciled object gets the scenario", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := &applyServer{}
			c := startApplyServer(t, api, faults)
			ctx := reconcileOf(t)
			got, err := children.Apply(ctx, c, child, owned)
			require.NoError(t, err)
			require.Equal(t, map[string]string{"note": "x", annotation: baggage.FromContext(ctx).String()}, got.Annotations)
			require.Equal(t, map[string]string{"note": "x"}, child.Annotations, "the object's own map is left as it was")
		})
	})
	t.Run("an object the reconciled object doesn't control doesn't", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := &applyServer{}
			c := startApplyServer(t, api, faults)
			got, err := children.Apply(reconcileOf(t), c, child, kube.ApplyOptions{FieldManager: "parent-controller"})
			require.NoError(t, err)
			require.Equal(t, map[string]string{"note": "x"}, got.Annotations)
		})
	})
	t.Run("a scenario that aborts the apply sends nothing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := &applyServer{}
			c := startApplyServer(t, api, faults)
			_, err := children.Apply(reconcileOf(t, fit.Rule{Point: "kube:children.example.com:patch", Fault: fit.Fault{Abort: true}}), c, child, owned)
			var injected *fault.InjectedError
			require.ErrorAs(t, err, &injected)
			require.ErrorContains(t, err, `kube: apply of Child.example.com "ns/c": `)
			require.Empty(t, api.requests())
		})
	})
}
