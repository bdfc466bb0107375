package crd

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type (
	tree  []tree
	graph map[string]graph
	port  int32
	meta  struct {
		Owner string `json:"owner"`
		Zone  string `json:"zone"`
	}
	app struct {
		meta
		Port    port   `json:"port"`
		Backup  port   `json:"backup,omitempty"`
		Version string `json:"version,string"`
	}
)

func TestReflect_reports_a_type_that_contains_itself_through_a_slice_or_a_map(t *testing.T) {
	_, err := Reflect(reflect.TypeFor[struct {
		Tree  tree  `json:"tree"`
		Graph graph `json:"graph"`
	}](), "spec")
	errorContains(t, err,
		"spec.tree[*]: crd.tree contains itself",
		"spec.graph[*]: crd.graph contains itself")
}

func TestReflect_reports_an_interface_as_one_whatever_its_methods(t *testing.T) {
	_, err := Reflect(reflect.TypeFor[struct {
		Value json.Marshaler `json:"value"`
	}](), "spec")
	errorContains(t, err, "spec.value: json.Marshaler is an interface, whose encoding depends on the value it holds")
}

func TestReflect_applies_a_types_rules_wherever_it_appears(t *testing.T) {
	var (
		p port
		m meta
		a app
	)
	s, err := Reflect(reflect.TypeFor[app](), "spec",
		Rules(&p, Field(&p).Minimum(1).Maximum(65535)),
		Rules(&m,
			Field(&m.Owner).MinLength(1).Description("inner"),
			Field(&m.Zone).Enum("a", "b"),
		).Validation("self.owner != ''", "an owner"),
		Rules(&a,
			Field(&a.Owner).Description("outer"),
			Field(&a.Backup).Maximum(1024),
			Field(&a.Version).Enum("1", "2").Pattern(regexp.MustCompile(`^"`)),
		),
	)
	noError(t, err)
	min1, max1024, max65535 := 1.0, 1024.0, 65535.0
	want := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"owner":   {Type: "string", MinLength: ptr[int64](1), Description: "outer"},
			"zone":    {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}}},
			"port":    {Type: "integer", Format: "int32", Minimum: &min1, Maximum: &max65535},
			"backup":  {Type: "integer", Format: "int32", Minimum: &min1, Maximum: &max1024},
			"version": {Type: "string", Pattern: `^"`, Enum: []apiextensionsv1.JSON{{Raw: []byte(`"\"1\""`)}, {Raw: []byte(`"\"2\""`)}}},
		},
		Required:     []string{"owner", "port", "version", "zone"},
		XValidations: apiextensionsv1.ValidationRules{{Rule: "self.owner != ''", Message: "an owner"}},
	}
	equal(t, asJSON(t, want), asJSON(t, s), "the schema")
}

func TestReflect_reports_rules_for_a_pointer_type_and_for_no_type_in_the_schema(t *testing.T) {
	var (
		p *meta
		n port
	)
	_, err := Reflect(reflect.TypeFor[meta](), "spec", Rules(&p), Rules(&n))
	errorContains(t, err,
		"Rules[0] (*crd.meta): *crd.meta is a pointer type",
		"Rules[1] (crd.port): crd.port appears nowhere in the schema")
}

func TestDefinition_CRD_reports_missing_types(t *testing.T) {
	_, err := Definition{Group: "a.b", Version: "v1", Kind: "A", Plural: "as", Scope: apiextensionsv1.NamespaceScoped}.CRD()
	errorContains(t, err, "the Spec and Status types are missing")
}
