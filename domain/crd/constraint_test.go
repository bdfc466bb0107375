package crd

import (
	"regexp"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestConstraint_apply_sets_its_counterpart_on_the_schema(t *testing.T) {
	one, two, half := 1.0, 2.0, 0.5
	var (
		text   = new(string)
		i32    = new(int32)
		i64    = new(int64)
		number = new(float64)
		list   = new([]string)
		dict   = new(map[string]int)
		object = new(struct{})
	)
	for _, c := range []struct {
		c      constraint
		typ    string
		quoted bool
		want   apiextensionsv1.JSONSchemaProps
	}{
		{last(Field(text).Description("d")), "string", false, apiextensionsv1.JSONSchemaProps{Description: "d"}},
		{last(Field(i32).Default(3)), "integer", false, apiextensionsv1.JSONSchemaProps{Default: &apiextensionsv1.JSON{Raw: []byte("3")}}},
		{last(Field(i32).Default(3)), "string", true, apiextensionsv1.JSONSchemaProps{Default: &apiextensionsv1.JSON{Raw: []byte(`"3"`)}}},
		{last(Field(dict).Default(map[string]int{"a": 1})), "object", false, apiextensionsv1.JSONSchemaProps{Default: &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}}},
		{last(Field(text).Enum("a", "b")), "string", false, apiextensionsv1.JSONSchemaProps{Enum: []apiextensionsv1.JSON{{Raw: []byte(`"a"`)}, {Raw: []byte(`"b"`)}}}},
		{last(Field(i64).Minimum(1)), "integer", false, apiextensionsv1.JSONSchemaProps{Minimum: &one}},
		{last(Field(number).Maximum(2)), "number", false, apiextensionsv1.JSONSchemaProps{Maximum: &two}},
		{last(Field(number).ExclusiveMinimum()), "number", false, apiextensionsv1.JSONSchemaProps{ExclusiveMinimum: true}},
		{last(Field(i64).ExclusiveMaximum()), "integer", false, apiextensionsv1.JSONSchemaProps{ExclusiveMaximum: true}},
		{last(Field(number).MultipleOf(0.5)), "number", false, apiextensionsv1.JSONSchemaProps{MultipleOf: &half}},
		{last(Field(text).MinLength(1)), "string", false, apiextensionsv1.JSONSchemaProps{MinLength: ptr[int64](1)}},
		{last(Field(text).MaxLength(2)), "string", false, apiextensionsv1.JSONSchemaProps{MaxLength: ptr[int64](2)}},
		{last(Field(text).Pattern(regexp.MustCompile(`^a+$`))), "string", false, apiextensionsv1.JSONSchemaProps{Pattern: `^a+$`}},
		{last(Field(i32).Format("int32")), "integer", false, apiextensionsv1.JSONSchemaProps{Format: "int32"}},
		{last(Field(list).MinItems(1)), "array", false, apiextensionsv1.JSONSchemaProps{MinItems: ptr[int64](1)}},
		{last(Field(list).MaxItems(2)), "array", false, apiextensionsv1.JSONSchemaProps{MaxItems: ptr[int64](2)}},
		{last(Field(list).ListType(SetList)), "array", false, apiextensionsv1.JSONSchemaProps{XListType: ptr("set")}},
		{last(Field(list).ListMap("a", "b")), "array", false, apiextensionsv1.JSONSchemaProps{XListType: ptr("map"), XListMapKeys: []string{"a", "b"}}},
		{last(Field(dict).MapType(AtomicMap)), "object", false, apiextensionsv1.JSONSchemaProps{XMapType: ptr("atomic")}},
		{last(Field(dict).MinProperties(1)), "object", false, apiextensionsv1.JSONSchemaProps{MinProperties: ptr[int64](1)}},
		{last(Field(dict).MaxProperties(2)), "object", false, apiextensionsv1.JSONSchemaProps{MaxProperties: ptr[int64](2)}},
		{last(Field(object).Nullable()), "object", false, apiextensionsv1.JSONSchemaProps{Nullable: true}},
		{last(Field(object).Optional()), "object", false, apiextensionsv1.JSONSchemaProps{}},
		{last(Field(object).Required()), "object", false, apiextensionsv1.JSONSchemaProps{}},
		{last(Field(i64).Validation("self > 0", "positive")), "integer", false, apiextensionsv1.JSONSchemaProps{XValidations: apiextensionsv1.ValidationRules{{Rule: "self > 0", Message: "positive"}}}},
		{last(Field(object).PreserveUnknownFields()), "object", false, apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}},
		{last(Field(object).EmbeddedResource()), "object", false, apiextensionsv1.JSONSchemaProps{XEmbeddedResource: true}},
		{Rules(object).Description("t").own[0], "object", false, apiextensionsv1.JSONSchemaProps{Description: "t"}},
		{Rules(object).Validation("has(self.a)", "an a").own[0], "object", false, apiextensionsv1.JSONSchemaProps{XValidations: apiextensionsv1.ValidationRules{{Rule: "has(self.a)", Message: "an a"}}}},
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
		c    constraint
		typ  string
		want string
	}{
		{last(Field(new(string)).Minimum("one")), "integer", `Minimum: "one" is not a number`},
		{last(Field(new(func())).Maximum(func() {})), "integer", "Maximum: json: unsupported type: func()"},
		{last(Field(new(chan int)).Enum(make(chan int))), "string", "Enum: json: unsupported type: chan int"},
		{last(Field(new(int)).MultipleOf(-1)), "integer", "MultipleOf(-1) is not positive"},
		{last(Field(new([]string)).MinItems(-1)), "array", "MinItems(-1) is negative"},
		{last(Field(new([]string)).ListType("list")), "array", `ListType("list") is neither atomic nor set`},
		{last(Field(new([]string)).ListType("map")), "array", `ListType("map") has no keys: use ListMap`},
		{last(Field(new([]string)).ListMap()), "array", "ListMap needs at least one key"},
		{last(Field(new(map[string]int)).MapType("flat")), "object", `MapType("flat") is neither atomic nor granular`},
		{last(Field(new(int)).Enum()), "integer", "Enum needs at least one value"},
		{last(Field(new(string)).Format("")), "string", `Format("") names no format`},
		{last(Field(new(string)).Validation("", "empty")), "string", "Validation has an empty rule"},
		{last(Field(new(string)).Pattern(nil)), "string", "Pattern(nil) has no regular expression"},
		{last(Field(new(int)).Minimum(1)), "int-or-string", "Minimum doesn't fit an int-or-string"},
		{last(Field(new(string)).MinLength(1)), "any", "MinLength doesn't fit a value of any type"},
		{last(Field(new(string)).Pattern(regexp.MustCompile("a"))), "boolean", "Pattern doesn't fit a boolean"},
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

// last returns the constraint f's last method added.
func last[T any](f FieldOf[T]) constraint { return f.constraints[len(f.constraints)-1] }

func TestFieldOf_methods_chain_without_sharing_their_constraints(t *testing.T) {
	size := new(int)
	base := Field(size).Minimum(1)
	a, b := base.Maximum(3), base.Maximum(5)
	equal(t, 2, len(a.constraints), "a's constraints")
	equal(t, 2, len(b.constraints), "b's constraints")
	equal(t, any(3), a.constraints[1].value, "a's Maximum")
	equal(t, any(5), b.constraints[1].value, "b's Maximum")
	equal(t, 1, len(base.constraints), "base's constraints")

	r := Rules(size, a)
	a.constraints[0] = constraint{}
	equal(t, kindMinimum, r.fields[0].constraints[0].kind, "Rules' copy of a's constraints")
}
