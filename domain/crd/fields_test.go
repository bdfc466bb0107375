package crd

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// TestParseTag_reads_tags_as_encoding_json_does builds a struct with each
// tag and checks the name and the options parseTag reads against what the
// encoding/json this test is built with writes.
func TestParseTag_reads_tags_as_encoding_json_does(t *testing.T) {
	for _, tag := range []string{
		"", "name", "my-name", "a b", "$ref", "x.y", "ü", "1abc", "-x", "-,", ",", ",,",
		"name,omitempty", ",omitempty", "name,omitzero", "name,string", "name,omitempty,string",
		"name,omitempty string",
		"name,case:ignore,omitempty", "a\\b", "'quoted'", "a'b", "a\"b", "a,b,c", "name,", "\xff",
		"name,inline", "name,omitEmpty",
	} {
		t.Run(tag, func(t *testing.T) {
			typ := reflect.StructOf([]reflect.StructField{{
				Name: "Field",
				Type: reflect.TypeFor[int](),
				Tag:  reflect.StructTag(`json:"` + escape(tag) + `"`),
			}})
			got := parseTag(typ.Field(0).Tag.Get("json"))

			zero, err := json.Marshal(reflect.New(typ).Elem().Interface())
			noError(t, err)
			set := reflect.New(typ).Elem()
			set.Field(0).SetInt(7)
			full, err := json.Marshal(set.Interface())
			noError(t, err)

			var keys map[string]json.RawMessage
			noError(t, json.Unmarshal(full, &keys))
			name := got.name
			if name == "" {
				name = "Field"
			}
			if _, ok := keys[name]; !ok || len(keys) != 1 {
				t.Fatalf("parseTag names the field %q; encoding/json writes %s", name, full)
			}
			value := "7"
			if got.quoted {
				value = `"7"`
			}
			equal(t, value, string(keys[name]), "the value, quoted as encoding/json quotes it")
			omitted := string(zero) == "{}"
			equal(t, omitted, got.omitEmpty || got.omitZero, "omitted as encoding/json omits a zero value")
		})
	}
}

// escape quotes a tag's value for a struct tag literal.
func escape(s string) string {
	var out []byte
	for i := range len(s) {
		if s[i] == '"' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

type (
	inner struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	deeper struct {
		inner
		C int `json:"c"`
	}
	other struct {
		A int `json:"a"`
		D int `json:"d"`
	}
	untagged  struct{ E int }
	withE     struct{ E int }
	text      string
	embedsAll struct {
		deeper
		*other
		untagged
		withE
		text
		B      int   `json:"b,omitempty"`
		Named  inner `json:"named"`
		hidden int   //nolint:unused // encoding/json skips it, as fieldsOf must
		Skip   int   `json:"-"`
	}
)

func TestFieldsOf_finds_the_fields_encoding_json_encodes(t *testing.T) {
	typ := reflect.TypeFor[embedsAll]()
	sf := fieldsOf(typ)
	var names []string
	for _, f := range sf.fields {
		names = append(names, f.name)
	}

	v := embedsAll{other: &other{}, text: "t", B: 1}
	raw, err := json.Marshal(v)
	noError(t, err)
	var keys map[string]any
	noError(t, json.Unmarshal(raw, &keys))
	var want []string
	for k := range keys {
		want = append(want, k)
	}
	slices.Sort(want)
	got := slices.Clone(names)
	slices.Sort(got)
	equal(t, want, got, "the names encoding/json writes")

	// a is deeper.inner.A at depth 2 and other.A at depth 1: other's wins.
	// b is the outer B, at depth 0. E ties between untagged and withE.
	equal(t, []string{"E"}, []string{sf.hidden[0].name}, "the names no field wins")
	for _, f := range sf.fields {
		switch f.name {
		case "a":
			equal(t, []int{1, 0}, f.index, "a's index")
			equal(t, true, f.viaPointer, "a is promoted through *other")
		case "b":
			equal(t, []int{5}, f.index, "b's index")
		case "c":
			equal(t, false, f.viaPointer, "c is promoted through a struct")
		}
	}
	equal(t, []reflect.Type{reflect.TypeFor[deeper](), reflect.TypeFor[other](), reflect.TypeFor[untagged](), reflect.TypeFor[withE](), reflect.TypeFor[inner]()},
		sf.embedded, "the structs it inlines, shallowest first")
}
