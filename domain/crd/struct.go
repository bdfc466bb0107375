package crd

import (
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
			b.check(&prop, p)
		}
		if required || (!f.omit && !f.viaPointer && !optional && prop.Default == nil) {
			s.Required = append(s.Required, f.name)
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
// required or defaulted fields.
func (b *builder) check(s *apiextensionsv1.JSONSchemaProps, place string) {
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
}
