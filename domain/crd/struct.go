package crd

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// fieldsOf returns what encoding/json makes of struct type t, working it
// out once per type: a type appears in many places of one schema.
func (b *builder) fieldsOf(t reflect.Type) structFields {
	sf, ok := b.fields[t]
	if !ok {
		sf = fieldsOf(t)
		b.fields[t] = sf
	}
	return sf
}

// structSchema reflects the object schema of struct type t: a property
// for each field encoding/json encodes, each with its rules.
func (b *builder) structSchema(t reflect.Type, place string) apiextensionsv1.JSONSchemaProps {
	sf := b.fieldsOf(t)
	for _, h := range sf.hidden {
		names := make([]string, 0, len(h.fields))
		for _, f := range h.fields {
			names = append(names, hop{owner: t, index: f.index}.goName())
		}
		b.failf(place, "%s encode as %q at the same depth, so encoding/json encodes none of them", strings.Join(names, " and "), h.name)
	}
	s := apiextensionsv1.JSONSchemaProps{Type: "object"}
	for _, f := range sf.fields {
		p := place + "." + f.name
		prop := b.schema(f.typ, p)
		if f.quoted && !b.special(deref(f.typ)) {
			prop = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		rules := b.fieldRules(t, f.index)
		var optional, required bool
		for _, fr := range rules {
			for _, c := range fr.constraints {
				switch c.kind {
				case kindOptional:
					optional = true
				case kindRequired:
					required = true
				}
				if err := c.apply(&prop, f.quoted); err != nil {
					b.failf(p, "%s: %v", fr.goName, err)
				}
			}
		}
		if optional && required {
			b.failf(p, "%s is both Optional and Required", rules[len(rules)-1].goName)
		}
		if len(rules) > 0 {
			b.check(&prop, f.typ, p)
		}
		if required || (!f.omit && !f.viaPointer && !optional && prop.Default == nil) {
			s.Required = append(s.Required, f.name)
			if !f.omit && writesNull(f.typ) {
				// encoding/json writes a nil, or a zero metav1.Time, as
				// null, which the API server refuses in a field that isn't
				// nullable: it prunes it and then misses a required value,
				// or, in a server-side apply, rejects it, either way
				// naming no Go type. Nullable keeps the null, and the
				// field required.
				if !prop.Nullable {
					b.nullable(t, f.name)
				}
				prop.Nullable = true
			}
		}
		if s.Properties == nil {
			s.Properties = make(map[string]apiextensionsv1.JSONSchemaProps, len(sf.fields))
		}
		s.Properties[f.name] = prop
	}
	slices.Sort(s.Required)
	// An embedded struct's own rules hold for the struct that inlines it:
	// its CEL rules see the same fields there.
	for _, et := range sf.embedded {
		tr := b.rules[et]
		if tr == nil {
			continue
		}
		tr.used = true
		for _, c := range tr.own {
			if c.kind == kindValidation {
				if err := c.apply(&s, false); err != nil {
					b.failf(place, "%s: %v", tr.label(), err)
				}
			}
		}
	}
	return s
}

// check reports constraints that hold only with others: an exclusive
// bound without its bound, and a list map whose keys aren't its items'
// required or defaulted fields. s is the schema of a field or a type of
// Go type t.
func (b *builder) check(s *apiextensionsv1.JSONSchemaProps, t reflect.Type, place string) {
	if s.ExclusiveMinimum && s.Minimum == nil {
		b.failf(place, "ExclusiveMinimum without a Minimum")
	}
	if s.ExclusiveMaximum && s.Maximum == nil {
		b.failf(place, "ExclusiveMaximum without a Maximum")
	}
	if s.XListType == nil || *s.XListType != "map" || s.Items == nil || s.Items.Schema == nil {
		return
	}
	items := s.Items.Schema
	if items.Type != "object" {
		b.failf(place, "ListMap needs items that are objects, not %s", article(typeOf(items)))
		return
	}
	for _, key := range s.XListMapKeys {
		prop, ok := items.Properties[key]
		switch {
		case !ok:
			b.failf(place, "ListMap key %q names no field of the items", key)
		case !slices.Contains(items.Required, key) && prop.Default == nil:
			b.failf(place, "ListMap key %q must be a required field of the items, or have a Default", key)
		}
	}
	b.keysNotNull(s, t)
}

// keysNotNull takes back the nullable that structSchema gave the keys of
// list map s, of Go type t: the API server refuses a CRD whose list-map
// key is nullable. Such a key is then as it was before nullable: a nil
// key is rejected, as an item without its key is. A key the end user
// made Nullable stays so, for the API server to refuse.
func (b *builder) keysNotNull(s *apiextensionsv1.JSONSchemaProps, t reflect.Type) {
	t = deref(t)
	if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
		return
	}
	nulled := b.nulled[deref(t.Elem())]
	var items *apiextensionsv1.JSONSchemaProps
	for _, key := range s.XListMapKeys {
		if !nulled[key] || !s.Items.Schema.Properties[key].Nullable {
			continue
		}
		if items == nil {
			// The items' schema is the item type's, shared wherever the
			// type appears: change a copy.
			copied := *s.Items.Schema
			copied.Properties = maps.Clone(copied.Properties)
			items = &copied
			s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
		}
		prop := items.Properties[key]
		prop.Nullable = false
		items.Properties[key] = prop
	}
}

// writesNull reports whether encoding/json may write a field of type t
// as null: t is a slice, a map or a pointer, whose nil is null, or a type
// with a built-in schema whose zero value encodes as null, as a zero
// metav1.Time does.
func writesNull(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice, reflect.Map, reflect.Pointer:
		return true
	}
	if !isBuiltin(t) {
		// Any other type is a struct or a scalar, which is never null,
		// or encodes itself with the end user's code, which reflecting a
		// schema doesn't run: Nullable says what they know of it.
		return false
	}
	zero, err := json.Marshal(reflect.New(t).Interface())
	return err == nil && string(zero) == "null"
}

// nullable records that structSchema made the field name of struct t
// nullable, which the end user didn't ask for.
func (b *builder) nullable(t reflect.Type, name string) {
	if b.nulled[t] == nil {
		b.nulled[t] = map[string]bool{}
	}
	b.nulled[t][name] = true
}
