package crd

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nilFields has a field of each kind that encoding/json may or may not
// write as null, with each way a field stops being required.
type nilFields struct {
	*nilEmbedded
	Slice        []string             `json:"slice"`
	Map          map[string]int32     `json:"map"`
	Pointer      *int32               `json:"pointer"`
	Object       *meta                `json:"object"`
	Quoted       *int64               `json:"quoted,string"`
	Bytes        []byte               `json:"bytes"`
	Raw          json.RawMessage      `json:"raw"`
	Time         metav1.Time          `json:"time"`
	Any          apiextensionsv1.JSON `json:"any"`
	Quantity     resource.Quantity    `json:"quantity"`
	Omitted      []string             `json:"omitted,omitempty"`
	Zero         map[string]int32     `json:"zero,omitzero"`
	MadeRequired []string             `json:"madeRequired,omitempty"`
	Defaulted    []string             `json:"defaulted"`
	Optional     *int32               `json:"optional"`
	Array        [2]string            `json:"array"`
	Text         string               `json:"text"`
	Struct       meta                 `json:"struct"`
}

type nilEmbedded struct {
	Promoted []string `json:"promoted"`
}

func TestReflect_makes_a_required_field_that_encodes_as_null_nullable(t *testing.T) {
	var v nilFields
	s, err := Reflect(reflect.TypeFor[nilFields](), "status", Rules(&v,
		Field(&v.MadeRequired).Required(),
		Field(&v.Defaulted).Default([]string{"a"}),
		Field(&v.Optional).Optional(),
	))
	noError(t, err)

	for _, c := range []struct {
		field              string
		required, nullable bool
	}{
		{field: "slice", required: true, nullable: true},
		{field: "map", required: true, nullable: true},
		{field: "pointer", required: true, nullable: true},
		{field: "object", required: true, nullable: true},
		{field: "quoted", required: true, nullable: true},
		{field: "bytes", required: true, nullable: true},
		{field: "raw", required: true, nullable: true},
		{field: "time", required: true, nullable: true},
		{field: "any", required: true, nullable: true},
		// A zero Quantity encodes as "0", never as null.
		{field: "quantity", required: true},
		// omitempty and omitzero leave a nil out rather than write null.
		{field: "omitted"},
		{field: "zero"},
		{field: "madeRequired", required: true},
		// The API server defaults a null, and prunes an optional one.
		{field: "defaulted"},
		{field: "optional"},
		// A nil embedded pointer leaves its fields out.
		{field: "promoted"},
		{field: "array", required: true},
		{field: "text", required: true},
		{field: "struct", required: true},
	} {
		t.Run(c.field, func(t *testing.T) {
			prop, ok := s.Properties[c.field]
			if !ok {
				t.Fatalf("no property %q in %s", c.field, asJSON(t, s))
			}
			equal(t, c.required, slices.Contains(s.Required, c.field), "required")
			equal(t, c.nullable, prop.Nullable, "nullable")
		})
	}
}

func TestReflect_makes_a_type_nullable_only_where_a_field_of_it_may_be_null(t *testing.T) {
	type tags []string
	s, err := Reflect(reflect.TypeFor[struct {
		Required tags   `json:"required"`
		Omitted  tags   `json:"omitted,omitempty"`
		Items    []tags `json:"items"`
	}](), "status")
	noError(t, err)
	equal(t, true, s.Properties["required"].Nullable, "the required field nullable")
	equal(t, false, s.Properties["omitted"].Nullable, "the omitempty field nullable, where the same type is required elsewhere")
	equal(t, false, s.Properties["items"].Items.Schema.Nullable, "an item nullable")
}

// keyed is a list map's item whose key may be nil.
type (
	keyed struct {
		Name  *string `json:"name"`
		Value int32   `json:"value"`
	}
	keyedList []keyed
	keyedUses struct {
		Field   []keyed   `json:"field"`
		Type    keyedList `json:"type"`
		Plain   keyed     `json:"plain"`
		Pointer []*keyed  `json:"pointer"`
	}
)

func TestReflect_leaves_a_list_maps_key_not_nullable_as_the_API_server_requires(t *testing.T) {
	var (
		uses keyedUses
		list keyedList
	)
	s, err := Reflect(reflect.TypeFor[keyedUses](), "spec",
		Rules(&uses,
			Field(&uses.Field).ListMap("name"),
			Field(&uses.Pointer).ListMap("name"),
		),
		Rules(&list, Field(&list).ListMap("name")),
	)
	noError(t, err)
	for _, c := range []struct {
		field    string
		key      apiextensionsv1.JSONSchemaProps
		nullable bool
	}{
		{field: "field", key: s.Properties["field"].Items.Schema.Properties["name"]},
		{field: "type", key: s.Properties["type"].Items.Schema.Properties["name"]},
		{field: "pointer", key: s.Properties["pointer"].Items.Schema.Properties["name"]},
		// The same type, where it is no list map's item, may be null.
		{field: "plain", key: s.Properties["plain"].Properties["name"], nullable: true},
	} {
		t.Run(c.field, func(t *testing.T) {
			equal(t, c.nullable, c.key.Nullable, "the key nullable")
			equal(t, "string", c.key.Type, "the key's type")
		})
	}
}

func TestReflect_keeps_a_list_maps_key_nullable_when_the_rules_say_so(t *testing.T) {
	var (
		uses keyedUses
		k    keyed
	)
	s, err := Reflect(reflect.TypeFor[keyedUses](), "spec",
		Rules(&uses, Field(&uses.Field).ListMap("name")),
		Rules(&k, Field(&k.Name).Nullable()),
	)
	noError(t, err)
	equal(t, true, s.Properties["field"].Items.Schema.Properties["name"].Nullable, "the key nullable, for the API server to refuse")
}
