package crd

import (
	"regexp"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestConstraint_apply_sets_its_counterpart_on_the_schema(t *testing.T) {
	one, two, half := 1.0, 2.0, 0.5
	for _, c := range []struct {
		c      Constraint
		typ    string
		quoted bool
		want   apiextensionsv1.JSONSchemaProps
	}{
		{Description("d"), "string", false, apiextensionsv1.JSONSchemaProps{Description: "d"}},
		{Default(int32(3)), "integer", false, apiextensionsv1.JSONSchemaProps{Default: &apiextensionsv1.JSON{Raw: []byte("3")}}},
		{Default(int32(3)), "string", true, apiextensionsv1.JSONSchemaProps{Default: &apiextensionsv1.JSON{Raw: []byte(`"3"`)}}},
		{Default(map[string]int{"a": 1}), "object", false, apiextensionsv1.JSONSchemaProps{Default: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}}},
		{Enum("a", "b"), "string", false, apiextensionsv1.JSONSchemaProps{Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}}}},
		{Minimum(int64(1)), "integer", false, apiextensionsv1.JSONSchemaProps{Minimum: &one}},
		{Maximum(2.0), "number", false, apiextensionsv1.JSONSchemaProps{Maximum: &two}},
		{ExclusiveMinimum(), "number", false, apiextensionsv1.JSONSchemaProps{ExclusiveMinimum: true}},
		{ExclusiveMaximum(), "integer", false, apiextensionsv1.JSONSchemaProps{ExclusiveMaximum: true}},
		{MultipleOf(0.5), "number", false, apiextensionsv1.JSONSchemaProps{MultipleOf: &half}},
		{MinLength(1), "string", false, apiextensionsv1.JSONSchemaProps{MinLength: ptr[int64](1)}},
		{MaxLength(2), "string", false, apiextensionsv1.JSONSchemaProps{MaxLength: ptr[int64](2)}},
		{Pattern(regexp.MustCompile(`^a+$`)), "string", false, apiextensionsv1.JSONSchemaProps{Pattern: `^a+$`}},
		{Format("int32"), "integer", false, apiextensionsv1.JSONSchemaProps{Format: "int32"}},
		{MinItems(1), "array", false, apiextensionsv1.JSONSchemaProps{MinItems: ptr[int64](1)}},
		{MaxItems(2), "array", false, apiextensionsv1.JSONSchemaProps{MaxItems: ptr[int64](2)}},
		{ListType("set"), "array", false, apiextensionsv1.JSONSchemaProps{XListType: ptr("set")}},
		{ListMap("a", "b"), "array", false, apiextensionsv1.JSONSchemaProps{XListType: ptr("map"), XListMapKeys: []string{"a", "b"}}},
		{MapType("atomic"), "object", false, apiextensionsv1.JSONSchemaProps{XMapType: ptr("atomic")}},
		{MinProperties(1), "object", false, apiextensionsv1.JSONSchemaProps{MinProperties: ptr[int64](1)}},
		{MaxProperties(2), "object", false, apiextensionsv1.JSONSchemaProps{MaxProperties: ptr[int64](2)}},
		{Nullable(), "object", false, apiextensionsv1.JSONSchemaProps{Nullable: true}},
		{Optional(), "object", false, apiextensionsv1.JSONSchemaProps{}},
		{Required(), "object", false, apiextensionsv1.JSONSchemaProps{}},
		{Validation("self > 0", "positive"), "integer", false, apiextensionsv1.JSONSchemaProps{XValidations: apiextensionsv1.ValidationRules{{Rule: "self > 0", Message: "positive"}}}},
		{PreserveUnknownFields(), "object", false, apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}},
		{EmbeddedResource(), "object", false, apiextensionsv1.JSONSchemaProps{XEmbeddedResource: true}},
	} {
		t.Run(c.c.String(), func(t *testing.T) {
			s := apiextensionsv1.JSONSchemaProps{Type: c.typ}
			noError(t, c.c.apply(&s, c.quoted))
			c.want.Type = c.typ
			equal(t, asJSON(t, c.want), asJSON(t, s), "the schema")
		})
	}
}

func TestConstraint_fits_only_its_types_of_schema(t *testing.T) {
	types := []string{"string", "integer", "number", "boolean", "array", "object", "int-or-string", "any"}
	fitting := map[kind][]string{
		kindMinimum: {"integer", "number"}, kindMaximum: {"integer", "number"},
		kindExclusiveMinimum: {"integer", "number"}, kindExclusiveMaximum: {"integer", "number"}, kindMultipleOf: {"integer", "number"},
		kindMinLength: {"string"}, kindMaxLength: {"string"}, kindPattern: {"string"},
		kindFormat:   {"string", "integer", "number"},
		kindMinItems: {"array"}, kindMaxItems: {"array"}, kindListType: {"array"}, kindListMap: {"array"},
		kindMinProperties: {"object"}, kindMaxProperties: {"object"}, kindMapType: {"object"}, kindEmbeddedResource: {"object"},
		kindPreserveUnknownFields: {"object", "any"},
	}
	for k := range kindNames {
		for _, typ := range types {
			want := true
			if only, ok := fitting[k]; ok {
				want = false
				for _, o := range only {
					want = want || o == typ
				}
			}
			if got := k.fits(typ); got != want {
				t.Errorf("%s fits %s: got %v, want %v", k, typ, got, want)
			}
		}
	}
}

func TestConstraint_apply_reports_a_value_that_is_wrong(t *testing.T) {
	for _, c := range []struct {
		c    Constraint
		typ  string
		want string
	}{
		{Minimum("one"), "integer", `Minimum: "one" is not a number`},
		{Maximum(func() {}), "integer", "Maximum: json: unsupported type: func()"},
		{Enum(make(chan int)), "string", "Enum: json: unsupported type: chan int"},
		{MultipleOf(-1), "integer", "MultipleOf(-1) is not positive"},
		{MinItems(-1), "array", "MinItems(-1) is negative"},
		{ListType("list"), "array", `ListType("list") is neither atomic nor set`},
		{Pattern(nil), "string", "Pattern(nil) has no regular expression"},
		{Minimum(1), "int-or-string", "Minimum doesn't fit an int-or-string"},
		{MinLength(1), "any", "MinLength doesn't fit a value of any type"},
		{Pattern(regexp.MustCompile("a")), "boolean", "Pattern doesn't fit a boolean"},
	} {
		s := apiextensionsv1.JSONSchemaProps{Type: c.typ}
		switch c.typ {
		case "int-or-string":
			s = apiextensionsv1.JSONSchemaProps{XIntOrString: true}
		case "any":
			s = apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}
		}
		errorContains(t, c.c.apply(&s, false), c.want)
	}
}
