package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// These tests create CRDs that kube.Resource reflects from Go types on the
// shared cluster's API server, and objects of them: the API server takes
// each CRD under strict field validation and establishes it, compiles its
// CEL rules, defaults what the Rules default, and rejects objects that
// break a rule, naming the field. Each test's CRDs are in a group of the
// test's own, named after its namespace, so tests never share one.

// crdCacheSpec is the spec's Memcached, with a field for each kind of rule.
type crdCacheSpec struct {
	Size   int32             `json:"size"`
	Image  string            `json:"image"`
	Mode   crdMode           `json:"mode,omitempty"`
	Ports  []crdPort         `json:"ports,omitempty"`
	Limits crdLimits         `json:"limits"`
	Memory resource.Quantity `json:"memory,omitempty"`
}

type crdCacheStatus struct {
	ReadyReplicas int32              `json:"readyReplicas,omitempty"`
	Conditions    []metav1.Condition `json:"conditions,omitempty"`
}

type crdMode string

type crdPort struct {
	Name   string `json:"name"`
	Number int32  `json:"number"`
}

type crdLimits struct {
	Min int32 `json:"min"`
	Max int32 `json:"max"`
}

// crdKitchenSpec holds a field of each kind of type the schema reflects.
type crdKitchenSpec struct {
	crdEmbedded
	*crdEmbeddedPointer
	Flag        bool                  `json:"flag"`
	Count       int                   `json:"count"`
	Ratio       float64               `json:"ratio"`
	Quoted      int64                 `json:"quoted,string"`
	Bytes       []byte                `json:"bytes"`
	Pointer     *int32                `json:"pointer,omitempty"`
	Tags        []string              `json:"tags"`
	Matrix      [][]int32             `json:"matrix"`
	Pair        [2]string             `json:"pair"`
	Labels      map[string]string     `json:"labels"`
	Nested      map[string][]crdPort  `json:"nested"`
	Wait        time.Duration         `json:"wait"`
	Time        metav1.Time           `json:"time"`
	Micro       metav1.MicroTime      `json:"micro"`
	Timeout     metav1.Duration       `json:"timeout"`
	Quantity    resource.Quantity     `json:"quantity"`
	Target      intstr.IntOrString    `json:"target"`
	Raw         runtime.RawExtension  `json:"raw"`
	Any         apiextensionsv1.JSON  `json:"any"`
	Message     json.RawMessage       `json:"message"`
	Template    crdTemplate           `json:"template"`
	Selector    *metav1.LabelSelector `json:"selector,omitempty"`
	Unencoded   string                `json:"-"`
	Annotations map[string]any        `json:"-"`
}

type crdEmbedded struct {
	Owner string `json:"owner"`
}

type crdEmbeddedPointer struct {
	Zone string `json:"zone"`
}

type crdTemplate struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Image    string            `json:"image"`
}

var (
	crdSpec      crdCacheSpec
	crdStatus    crdCacheStatus
	crdModeValue crdMode
	crdPortValue crdPort
	crdLimit     crdLimits
)

// crdCache is a Resource of the test's own group.
func crdCache(group string) kube.Resource[crdCacheSpec, crdCacheStatus] {
	return kube.Resource[crdCacheSpec, crdCacheStatus]{
		Group:      group,
		Version:    "v1alpha1",
		Kind:       "Cache",
		Plural:     "caches",
		Scope:      kube.Namespaced,
		ShortNames: []string{"ca"},
		Categories: []string{"e2e"},
		Columns: []kube.PrinterColumn{
			kube.Column("Size", &crdSpec.Size),
			kube.Column("Ready", &crdStatus.ReadyReplicas),
		},
		Rules: []kube.TypeRules{
			kube.Rules(&crdSpec,
				kube.Field(&crdSpec.Size).Minimum(1).Maximum(3).Description("How many memcached pods run."),
				kube.Field(&crdSpec.Image).Pattern(regexp.MustCompile(`^memcached:`)).Default("memcached:1.6.26-alpine3.19"),
				kube.Field(&crdSpec.Mode).Default("safe"),
				kube.Field(&crdSpec.Ports).ListMap("name").MaxItems(4),
			),
			kube.Rules(&crdModeValue, kube.Field(&crdModeValue).Enum("fast", "safe")),
			kube.Rules(&crdPortValue, kube.Field(&crdPortValue.Number).Minimum(1).Maximum(65535)),
			kube.Rules(&crdLimit).Validation("self.min <= self.max", "min must not exceed max"),
			kube.Rules(&crdStatus, kube.Field(&crdStatus.Conditions).ListMap("type")),
		},
	}
}

// crdKitchen is a Resource of the test's own group whose spec holds every
// kind of type.
func crdKitchen(group string) kube.Resource[crdKitchenSpec, crdCacheStatus] {
	return kube.Resource[crdKitchenSpec, crdCacheStatus]{
		Group: group, Version: "v1", Kind: "Kitchen", Plural: "kitchens", Scope: kube.Cluster,
	}
}

// crdGroup is an API group of the test's own.
func crdGroup(ns string) string { return ns + ".e2e.loam.dev" }

// installCRD creates crd as whatever deploys a controller would, with
// strict field validation, waits until the API server has established it
// and serves its resource, and deletes it when the test ends.
func installCRD(t *testing.T, c *kubetest.Cluster, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ext, err := apiextensions.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	_, err = crds.Create(t.Context(), crd, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = crds.Delete(ctx, crd.Name, metav1.DeleteOptions{})
	})

	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: crd.Spec.Versions[0].Name, Resource: crd.Spec.Names.Plural}
	wait.For(t, time.Minute, func() bool {
		got, err := crds.Get(t.Context(), crd.Name, metav1.GetOptions{})
		require.NoError(t, err)
		for _, cond := range got.Status.Conditions {
			require.False(t, cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse,
				"names not accepted: %s", cond.Message)
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				// Established; served once a list of it succeeds.
				_, err := dyn.Resource(gvr).List(t.Context(), metav1.ListOptions{Limit: 1})
				return err == nil
			}
		}
		return false
	}, "the CRD is never established and served")
}

// unstructuredOf encodes obj as the dynamic client sends it.
func unstructuredOf(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(raw))
	return u
}

func crdCacheObject(group, ns string, spec crdCacheSpec) kube.Object[crdCacheSpec, crdCacheStatus] {
	return kube.Object[crdCacheSpec, crdCacheStatus]{
		TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1alpha1", Kind: "Cache"},
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns},
		Spec:       spec,
	}
}

func TestCRD_from_Go_types_is_established_and_checks_objects_as_its_Rules_say(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	group := crdGroup(ns)
	r := crdCache(group)
	crd, err := r.CRD()
	require.NoError(t, err)
	installCRD(t, c, crd)

	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	caches := dyn.Resource(r.GVR()).Namespace(ns)
	valid := func() crdCacheSpec {
		return crdCacheSpec{
			Size: 2, Image: "memcached:1.6", Mode: "fast",
			Ports:  []crdPort{{Name: "memcache", Number: 11211}, {Name: "metrics", Number: 9150}},
			Limits: crdLimits{Min: 1, Max: 2}, Memory: resource.MustParse("64Mi"),
		}
	}

	t.Run("a valid object is created as the Go types encode it", func(t *testing.T) {
		obj := crdCacheObject(group, ns, valid())
		obj.Name = "valid"
		created, err := caches.Create(t.Context(), unstructuredOf(t, obj), metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		raw, err := created.MarshalJSON()
		require.NoError(t, err)
		var back kube.Object[crdCacheSpec, crdCacheStatus]
		require.NoError(t, json.Unmarshal(raw, &back))
		require.Equal(t, obj.Spec.Ports, back.Spec.Ports)
		require.True(t, obj.Spec.Memory.Equal(back.Spec.Memory))
		back.Spec.Memory = obj.Spec.Memory
		require.Equal(t, obj.Spec, back.Spec)
	})

	t.Run("the API server applies the defaults", func(t *testing.T) {
		obj := unstructuredOf(t, map[string]any{
			"apiVersion": group + "/v1alpha1", "kind": "Cache",
			"metadata": map[string]any{"name": "defaulted"},
			"spec":     map[string]any{"size": 1, "limits": map[string]any{"min": 0, "max": 0}},
		})
		created, err := caches.Create(t.Context(), obj, metav1.CreateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)
		image, _, err := unstructured.NestedString(created.Object, "spec", "image")
		require.NoError(t, err)
		require.Equal(t, "memcached:1.6.26-alpine3.19", image)
		mode, _, err := unstructured.NestedString(created.Object, "spec", "mode")
		require.NoError(t, err)
		require.Equal(t, "safe", mode)
	})

	for _, c := range []struct {
		name   string
		change func(*crdCacheSpec)
		want   []string
	}{
		{"a size below its minimum", func(s *crdCacheSpec) { s.Size = 0 }, []string{"spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"}},
		{"a size above its maximum", func(s *crdCacheSpec) { s.Size = 4 }, []string{"spec.size: Invalid value: 4: spec.size in body should be less than or equal to 3"}},
		{"an image that doesn't match its pattern", func(s *crdCacheSpec) { s.Image = "nginx" }, []string{`spec.image: Invalid value: "nginx": spec.image in body should match '^memcached:'`}},
		{"a mode outside its type's enum", func(s *crdCacheSpec) { s.Mode = "slow" }, []string{`spec.mode: Unsupported value: "slow": supported values: "fast", "safe"`}},
		{"a port outside its type's range", func(s *crdCacheSpec) { s.Ports[1].Number = 0 }, []string{"spec.ports[1].number: Invalid value: 0: spec.ports[1].number in body should be greater than or equal to 1"}},
		{"two ports of one name in a list map", func(s *crdCacheSpec) { s.Ports[1].Name = "memcache" }, []string{`spec.ports[1]: Duplicate value: {"name":"memcache"}`}},
		{"too many ports", func(s *crdCacheSpec) {
			s.Ports = []crdPort{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}, {"e", 5}}
		}, []string{"spec.ports: Too many: 5: must have at most 4 items"}},
		{"limits that break their type's CEL rule", func(s *crdCacheSpec) { s.Limits = crdLimits{Min: 3, Max: 2} }, []string{"spec.limits: Invalid value", "min must not exceed max"}},
	} {
		t.Run("rejects "+c.name, func(t *testing.T) {
			s := valid()
			c.change(&s)
			obj := crdCacheObject(group, ns, s)
			obj.Name = "invalid"
			_, err := caches.Create(t.Context(), unstructuredOf(t, obj), metav1.CreateOptions{FieldValidation: "Strict"})
			require.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			for _, want := range c.want {
				require.ErrorContains(t, err, want)
			}
		})
	}

	t.Run("rejects a field the Go types don't have, under strict validation", func(t *testing.T) {
		obj := unstructuredOf(t, crdCacheObject(group, ns, valid()))
		obj.SetName("unknown")
		require.NoError(t, unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicas"))
		_, err := caches.Create(t.Context(), obj, metav1.CreateOptions{FieldValidation: "Strict"})
		require.ErrorContains(t, err, `unknown field "spec.replicas"`)
	})

	t.Run("the status subresource takes conditions as a list map", func(t *testing.T) {
		obj := crdCacheObject(group, ns, valid())
		obj.Name = "status"
		created, err := caches.Create(t.Context(), unstructuredOf(t, obj), metav1.CreateOptions{})
		require.NoError(t, err)
		condition := func(reason string) metav1.Condition {
			return metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.Now()}
		}

		obj.ResourceVersion = created.GetResourceVersion()
		obj.Status = crdCacheStatus{ReadyReplicas: 2, Conditions: []metav1.Condition{condition("Ready")}}
		updated, err := caches.UpdateStatus(t.Context(), unstructuredOf(t, obj), metav1.UpdateOptions{FieldValidation: "Strict"})
		require.NoError(t, err)

		obj.ResourceVersion = updated.GetResourceVersion()
		obj.Status.Conditions = append(obj.Status.Conditions, condition("Again"))
		_, err = caches.UpdateStatus(t.Context(), unstructuredOf(t, obj), metav1.UpdateOptions{})
		require.ErrorContains(t, err, `status.conditions[1]: Duplicate value: {"type":"Available"}`)

		obj.Status.Conditions = []metav1.Condition{condition("not CamelCase")}
		_, err = caches.UpdateStatus(t.Context(), unstructuredOf(t, obj), metav1.UpdateOptions{})
		require.ErrorContains(t, err, "status.conditions[0].reason")
	})
}

func TestCRD_of_every_kind_of_type_stores_objects_as_encoding_json_writes_them(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	group := crdGroup(c.Namespace(t))
	r := crdKitchen(group)
	crd, err := r.CRD()
	require.NoError(t, err)
	installCRD(t, c, crd)

	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	pointer := int32(7)
	obj := kube.Object[crdKitchenSpec, crdCacheStatus]{
		TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1", Kind: "Kitchen"},
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Spec: crdKitchenSpec{
			crdEmbedded:        crdEmbedded{Owner: "me"},
			crdEmbeddedPointer: &crdEmbeddedPointer{Zone: "a"},
			Flag:               true, Count: 3, Ratio: 0.5, Quoted: 42, Bytes: []byte("bytes"), Pointer: &pointer,
			Tags: []string{"a"}, Matrix: [][]int32{{1, 2}, {3}}, Pair: [2]string{"x", "y"},
			Labels: map[string]string{"a": "b"}, Nested: map[string][]crdPort{"web": {{Name: "http", Number: 80}}},
			Wait:    time.Second,
			Time:    metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
			Micro:   metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)),
			Timeout: metav1.Duration{Duration: time.Minute}, Quantity: resource.MustParse("1500m"), Target: intstr.FromString("50%"),
			Raw:      runtime.RawExtension{Raw: []byte(`{"kind":"Anything","nested":{"deep":[1,2]}}`)},
			Any:      apiextensionsv1.JSON{Raw: []byte(`[1,"two",{"three":3}]`)},
			Message:  json.RawMessage(`{"free":"form"}`),
			Template: crdTemplate{Metadata: metav1.ObjectMeta{Name: "child", Labels: map[string]string{"app": "x"}}, Image: "busybox"},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		},
	}
	sent := unstructuredOf(t, obj)
	created, err := dyn.Resource(r.GVR()).Create(t.Context(), sent, metav1.CreateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)

	want, err := json.Marshal(sent.Object["spec"])
	require.NoError(t, err)
	got, err := json.Marshal(created.Object["spec"])
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "the API server pruned, defaulted or changed nothing")
}
