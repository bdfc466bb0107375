package kube_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/loam-dev/loam/kube"
)

// These tests run the API server's own code for CRDs in the test process:
// the validation a CRD passes when it is created, and the pruning,
// defaulting and validation each object of it passes. The end user's tests
// against a cluster run the same code behind HTTP (kubetest/e2e does).

// validateCRD fails t unless the API server would create crd.
func validateCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	var internal apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil))
	// As the API server's create strategy does before it validates.
	internal.Status = apiextensions.CustomResourceDefinitionStatus{StoredVersions: []string{crd.Spec.Versions[0].Name}}
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)
	require.Empty(t, errs.ToAggregate())
}

// admission is what the API server does with each object of a CRD.
type admission struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

func newAdmission(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) admission {
	t.Helper()
	validateCRD(t, crd)
	var internal apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil))
	s, err := structuralschema.NewStructural(&internal)
	require.NoError(t, err)
	v, _, err := apiservervalidation.NewSchemaValidator(&internal)
	require.NoError(t, err)
	return admission{structural: s, validator: v, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
}

// admit does to obj what the API server does to an object it creates: it
// prunes the fields the schema doesn't name, defaults the rest, and
// validates it with the schema, its list types, its CEL rules and the
// metadata of the resources it embeds. It
// returns the object as it would be stored, the pruned fields' paths, and
// the errors.
func (a admission) admit(t *testing.T, obj any) (map[string]any, []string, field.ErrorList) {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	u := map[string]any{}
	require.NoError(t, utiljson.Unmarshal(raw, &u))
	pruned := pruning.PruneWithOptions(u, a.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	defaulting.Default(u, a.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, u, a.validator)
	errs = append(errs, objectmeta.Validate(context.Background(), nil, u, a.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, a.structural, u)...)
	celErrs, _ := a.cel.Validate(context.Background(), nil, a.structural, u, nil, celconfig.RuntimeCELCostBudget)
	return u, pruned, append(errs, celErrs...)
}

func TestMemcachedCRD_is_valid_to_the_API_server(t *testing.T) {
	crd, err := Memcached.CRD()
	require.NoError(t, err)
	validateCRD(t, crd)
}

func memcached(s MemcachedSpec, st MemcachedStatus) kube.Object[MemcachedSpec, MemcachedStatus] {
	return kube.Object[MemcachedSpec, MemcachedStatus]{
		TypeMeta:   metav1.TypeMeta{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached"},
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "default"},
		Spec:       s,
		Status:     st,
	}
}

func TestMemcached_objects_are_defaulted_and_checked_as_the_API_server_does(t *testing.T) {
	crd, err := Memcached.CRD()
	require.NoError(t, err)
	a := newAdmission(t, crd)
	condition := func(typ, reason string) metav1.Condition {
		return metav1.Condition{
			Type: typ, Status: metav1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		}
	}

	t.Run("a valid object is stored as it is", func(t *testing.T) {
		obj := memcached(MemcachedSpec{Size: 3, Image: "memcached:1.6"}, MemcachedStatus{
			ReadyReplicas: 3,
			Conditions:    []metav1.Condition{condition("Available", "Ready"), condition("Progressing", "Done")},
		})
		u, pruned, errs := a.admit(t, obj)
		require.Empty(t, errs)
		require.Empty(t, pruned)
		require.Equal(t, int64(3), u["spec"].(map[string]any)["size"])
	})
	t.Run("an image left out is defaulted", func(t *testing.T) {
		u, _, errs := a.admit(t, map[string]any{
			"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
			"metadata": map[string]any{"name": "cache"}, "spec": map[string]any{"size": 1},
		})
		require.Empty(t, errs)
		require.Equal(t, "memcached:1.6.26-alpine3.19", u["spec"].(map[string]any)["image"])
	})
	for _, c := range []struct {
		name string
		obj  any
		want string
	}{
		{"a size below the minimum", memcached(MemcachedSpec{Size: 0, Image: "memcached:1"}, MemcachedStatus{}), "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"},
		{"a size above the maximum", memcached(MemcachedSpec{Size: 4, Image: "memcached:1"}, MemcachedStatus{}), "spec.size: Invalid value: 4: spec.size in body should be less than or equal to 3"},
		{"an image that doesn't match the pattern", memcached(MemcachedSpec{Size: 1, Image: "nginx"}, MemcachedStatus{}), `spec.image: Invalid value: "nginx": spec.image in body should match '^memcached:'`},
		{"a missing size", map[string]any{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "spec": map[string]any{}}, "spec.size: Required value"},
		{"two conditions of one type", memcached(MemcachedSpec{Size: 1, Image: "memcached:1"}, MemcachedStatus{
			Conditions: []metav1.Condition{condition("Available", "A"), condition("Available", "B")},
		}), `status.conditions[1]: Duplicate value: {"type":"Available"}`},
		{"a condition's reason that isn't CamelCase", memcached(MemcachedSpec{Size: 1, Image: "memcached:1"}, MemcachedStatus{
			Conditions: []metav1.Condition{condition("Available", "not ready")},
		}), `status.conditions[0].reason: Invalid value: "not ready"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, errs := a.admit(t, c.obj)
			require.ErrorContains(t, errs.ToAggregate(), c.want)
		})
	}
}

func TestServer_objects_are_checked_by_every_constraint(t *testing.T) {
	crd, err := thing[Server](serverRules...).CRD()
	require.NoError(t, err)
	a := newAdmission(t, crd)
	valid := func() Server {
		return Server{
			Name: "web", Replicas: int32Ptr(2), Ratio: 0.5, Mode: "fast",
			Tags: []string{"a", "b"}, Labels: map[string]string{"app": "web"},
			Ports:    []Port{{Name: "http", Number: 80}, {Name: "https", Number: 443}},
			Main:     &Port{Name: "http", Number: 80},
			Template: Template{Port: Port{Name: "metrics", Number: 9090}, Extra: map[string]string{"a": "b"}},
			Retries:  2,
			Config:   runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"a":"b"}}`)},
			Since:    "2026-01-02T03:04:05Z",
			Limits:   Limits{Min: 1, Max: 2},
		}
	}
	object := func(s Server) kube.Object[Server, NoStatus] {
		return kube.Object[Server, NoStatus]{
			TypeMeta:   metav1.TypeMeta{APIVersion: "test.loam.dev/v1", Kind: "Thing"},
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       s,
		}
	}

	t.Run("a valid object", func(t *testing.T) {
		_, pruned, errs := a.admit(t, object(valid()))
		require.Empty(t, errs)
		require.Empty(t, pruned)
	})
	t.Run("defaults", func(t *testing.T) {
		u, _, errs := a.admit(t, map[string]any{
			"apiVersion": "test.loam.dev/v1", "kind": "Thing", "metadata": map[string]any{"name": "web"},
			"spec": map[string]any{
				"name": "web", "ratio": 0.5, "labels": map[string]any{"a": "b"}, "ports": []any{},
				"template": map[string]any{"port": map[string]any{"name": "http", "number": 80}},
				"min":      1, "max": 1,
			},
		})
		require.Empty(t, errs)
		spec := u["spec"].(map[string]any)
		require.Equal(t, "safe", spec["mode"])
		require.Equal(t, "3", spec["retries"], "a quoted field's default is quoted too")
		var decoded Server
		raw, err := json.Marshal(spec)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &decoded))
		require.Equal(t, 3, decoded.Retries)
	})
	for _, c := range []struct {
		name   string
		change func(*Server)
		want   string
	}{
		{"an empty name", func(s *Server) { s.Name = "" }, "spec.name: Invalid value: \"\": spec.name in body should be at least 1 chars long"},
		{"a name that doesn't match", func(s *Server) { s.Name = "Web" }, "spec.name in body should match '^[a-z]+$'"},
		{"a forbidden name, by the type's CEL rule", func(s *Server) { s.Name = "forbidden" }, "spec: Invalid value: the name is forbidden"},
		{"a negative replicas count", func(s *Server) { s.Replicas = int32Ptr(-1) }, "spec.replicas in body should be greater than or equal to 0"},
		{"a ratio of its exclusive maximum", func(s *Server) { s.Ratio = 1 }, "spec.ratio in body should be less than 1"},
		{"a ratio of its exclusive minimum", func(s *Server) { s.Ratio = 0 }, "spec.ratio in body should be greater than 0"},
		{"a ratio that is no multiple", func(s *Server) { s.Ratio = 0.3 }, "spec.ratio in body should be a multiple of 0.125"},
		{"a mode outside its type's enum", func(s *Server) { s.Mode = "slow" }, `spec.mode: Unsupported value: "slow": supported values: "fast", "safe"`},
		{"too many tags", func(s *Server) { s.Tags = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"} }, "spec.tags: Too many: 9: must have at most 8 items"},
		{"a tag twice in a set", func(s *Server) { s.Tags = []string{"a", "a"} }, `spec.tags[1]: Duplicate value: "a"`},
		{"a long tag, by the field's CEL rule", func(s *Server) { s.Tags = []string{"abcdefghijklmnopq"} }, "spec.tags: Invalid value: tags are short"},
		{"no labels", func(s *Server) { s.Labels = nil }, "spec.labels: Required value"},
		{"too many labels", func(s *Server) { s.Labels = map[string]string{"a": "", "b": "", "c": "", "d": "", "e": ""} }, "spec.labels: Too many: 5: must have at most 4 items"},
		{"a port outside its range", func(s *Server) { s.Ports[0].Number = 70000 }, "spec.ports[0].number in body should be less than or equal to 65535"},
		{"a nested port outside its range, by its type's Rules", func(s *Server) { s.Template.Port.Number = 0 }, "spec.template.port.number in body should be greater than or equal to 1"},
		{"a port name outside its enum", func(s *Server) { s.Main.Name = "ftp" }, `spec.main.name: Unsupported value: "ftp"`},
		{"two ports of one name in a list map", func(s *Server) { s.Ports[1].Name = "http" }, `spec.ports[1]: Duplicate value: {"name":"http"}`},
		{"a min above the max, by the embedded struct's CEL rule", func(s *Server) { s.Min, s.Max = 3, 2 }, "spec: Invalid value: min must not exceed max"},
		{"a promoted field below its minimum", func(s *Server) { s.Min = -1 }, "spec.min in body should be greater than or equal to 0"},
		{"a date that isn't one", func(s *Server) { s.Since = "yesterday" }, `spec.since in body must be of type date-time: "yesterday"`},
		{"an embedded resource without a kind", func(s *Server) { s.Config.Raw = []byte(`{"apiVersion":"v1","metadata":{"name":"c"}}`) }, "spec.config.kind: Required value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := valid()
			c.change(&s)
			_, _, errs := a.admit(t, object(s))
			require.ErrorContains(t, errs.ToAggregate(), c.want)
		})
	}
}

// TestCorpus_objects_encoded_by_encoding_json_pass_unchanged fills every
// field of each corpus type, encodes the object, and checks that the API
// server would prune nothing of it, change nothing and reject nothing: the
// schema is the encoding's.
func TestCorpus_objects_encoded_by_encoding_json_pass_unchanged(t *testing.T) {
	for name, check := range map[string]func(*testing.T){
		"Scalars":     passesUnchanged[Scalars],
		"Tags":        passesUnchanged[Tags],
		"Collections": passesUnchanged[Collections],
		"Embedding":   passesUnchanged[Embedding],
		"Dominance":   passesUnchanged[Dominance],
		"Builtins":    passesUnchanged[Builtins],
	} {
		t.Run(name, check)
	}
}

func passesUnchanged[S any](t *testing.T) {
	crd, err := thing[S]().CRD()
	require.NoError(t, err)
	a := newAdmission(t, crd)
	obj := kube.Object[S, NoStatus]{
		TypeMeta:   metav1.TypeMeta{APIVersion: "test.loam.dev/v1", Kind: "Thing"},
		ObjectMeta: metav1.ObjectMeta{Name: "filled"},
	}
	fill(reflect.ValueOf(&obj.Spec).Elem())
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	want := map[string]any{}
	require.NoError(t, utiljson.Unmarshal(raw, &want))

	got, pruned, errs := a.admit(t, obj)
	require.Empty(t, errs)
	require.Empty(t, pruned)
	require.Equal(t, want, got)
}

// fill sets every field v holds to a value that isn't zero, so
// encoding/json encodes every one of them.
func fill(v reflect.Value) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	switch v.Addr().Interface().(type) {
	case *metav1.Time:
		v.Set(reflect.ValueOf(metav1.NewTime(at)))
		return
	case *metav1.MicroTime:
		v.Set(reflect.ValueOf(metav1.NewMicroTime(at)))
		return
	case *time.Time:
		v.Set(reflect.ValueOf(at))
		return
	case *metav1.Duration:
		v.Set(reflect.ValueOf(metav1.Duration{Duration: time.Minute}))
		return
	case *resource.Quantity:
		v.Set(reflect.ValueOf(resource.MustParse("1500m")))
		return
	case *intstr.IntOrString:
		v.Set(reflect.ValueOf(intstr.FromString("50%")))
		return
	case *runtime.RawExtension:
		v.Set(reflect.ValueOf(runtime.RawExtension{Raw: []byte(`{"any":["json"]}`)}))
		return
	case *apiextensionsv1.JSON:
		v.Set(reflect.ValueOf(apiextensionsv1.JSON{Raw: []byte(`{"any":["json"]}`)}))
		return
	case *json.RawMessage:
		v.SetBytes([]byte(`[1,{"a":"b"}]`))
		return
	case *metav1.ObjectMeta:
		v.Set(reflect.ValueOf(metav1.ObjectMeta{Name: "nested", Labels: map[string]string{"a": "b"}}))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.String:
		v.SetString("Text")
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}
