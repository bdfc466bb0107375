package crd

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TypeRules constrain one Go type's schema, and those of its fields,
// wherever the type appears in a resource's spec or status, so a type
// held in several places is constrained once, and alike everywhere. Rules
// and Schema make them; a Definition takes at most one of either for a
// type.
type TypeRules struct {
	// value is a pointer to a value of the type, which fields' pointers
	// point into: the builder reads none of it but the pointers that lead
	// to an embedded or nested struct.
	value any
	// own constrain the type's own schema.
	own []constraint
	// fields constrain the type's fields, those promoted from embedded
	// structs included. A field whose pointer is value itself constrains
	// the type's own schema, as own does.
	fields []fieldRule
	// schema, when not nil, is the type's whole schema, used in place of
	// the one reflected from it. own still applies to it; fields must be
	// empty.
	schema *apiextensionsv1.JSONSchemaProps
}

// FieldRules are the constraints on one field. Every FieldOf is one, and
// nothing else is.
type FieldRules interface {
	asField() fieldRule
}

// fieldRule constrains one field of a TypeRules' type.
type fieldRule struct {
	// pointer is a pointer to the field, in the TypeRules' value.
	pointer any
	// constraints apply to the field's schema, in order.
	constraints []constraint
}

// Rules constrains the fields of the type T, each named by a Field of a
// pointer into *value, such as Field(&spec.Size) with value &spec. A
// field promoted from a struct T embeds is T's to constrain; a field of a
// struct T nests, such as &spec.Template.Port, is that struct's, and
// naming it here is a mistake that the builder reports. A Field of value
// itself constrains T's own schema.
//
// Rules reads nothing from *value but the pointers that lead to structs it
// embeds or nests: it only finds which field each pointer names. value is
// usually the address of a package-level variable.
func Rules[T any](value *T, fields ...FieldRules) TypeRules {
	r := TypeRules{value: value, fields: make([]fieldRule, 0, len(fields))}
	for _, f := range fields {
		if f == nil {
			r.fields = append(r.fields, fieldRule{})
			continue
		}
		r.fields = append(r.fields, f.asField())
	}
	return r
}

// Schema gives the type T its schema whole, in place of the one reflected
// from it. It is how a type that encodes itself, with a MarshalJSON or
// MarshalText method, gets a schema at all. value only names the type:
// it may be nil. The schema must be structural, as a CRD's is, with no
// $ref; the API server checks the rest when the CRD is applied.
func Schema[T any](value *T, schema apiextensionsv1.JSONSchemaProps) TypeRules {
	return TypeRules{value: value, schema: schema.DeepCopy()}
}

// Description describes the type's schema, which kubectl explain shows
// wherever the type appears, unless a field of the type has a Description
// of its own. A description is a value, not a doc comment: a schema
// reflected at run time has no comments to read.
func (r TypeRules) Description(text string) TypeRules {
	return r.with(constraint{kind: kindDescription, text: text})
}

// Validation adds a CEL rule on the type's schema, in which self is a
// value of the type, with the message the API server rejects an object
// that breaks it with. The API server compiles the rule when the CRD is
// applied.
func (r TypeRules) Validation(rule, message string) TypeRules {
	return r.with(celRule(rule, message))
}

func (r TypeRules) with(c constraint) TypeRules {
	r.own = append(slices.Clip(r.own), c)
	return r
}

// resolvedType are the TypeRules of one type, with their fields resolved
// to index paths.
type resolvedType struct {
	index    int
	typ      reflect.Type
	value    reflect.Value // the pointer Rules were given
	own      []constraint
	fields   map[string]*resolvedField
	schema   *apiextensionsv1.JSONSchemaProps
	used     bool
	isSchema bool
}

// resolvedField are the constraints on one field of a type.
type resolvedField struct {
	goName      string
	constraints []constraint
}

func (r *resolvedType) label() string {
	return fmt.Sprintf("Rules[%d] (%s)", r.index, r.typ)
}

// add resolves the TypeRules at index i of the list.
func (b *builder) add(i int, r TypeRules) {
	label := fmt.Sprintf("Rules[%d]", i)
	pv := reflect.ValueOf(r.value)
	if !pv.IsValid() || pv.Kind() != reflect.Pointer {
		b.failf(label, "has no pointer to a value of the type it constrains")
		return
	}
	t := pv.Type().Elem()
	tr := &resolvedType{index: i, typ: t, value: pv, own: slices.Clone(r.own), schema: r.schema, isSchema: r.schema != nil}
	label = tr.label()
	if prior, ok := b.rules[t]; ok {
		switch {
		case prior.isSchema && tr.isSchema:
			b.failf(label, "a second Schema for the type, which Rules[%d] gives a Schema already", prior.index)
		case prior.isSchema || tr.isSchema:
			b.failf(label, "both Rules and a Schema for the type, with Rules[%d]: a Schema is the type's whole schema", prior.index)
		default:
			b.failf(label, "a second Rules for the type, which Rules[%d] constrains already", prior.index)
		}
		return
	}
	if t.Kind() == reflect.Pointer {
		b.failf(label, "%s is a pointer type: give Rules a pointer to a value of the type it points to", t)
		return
	}
	if t.Name() == "" {
		b.failf(label, "%s is a type with no name: Rules belong to a type wherever it appears, so give it a name of its own", t)
		return
	}
	b.rules[t] = tr
	b.order = append(b.order, tr)
	if r.schema != nil {
		if hasRef(r.schema) {
			b.failf(label, "the Schema has a $ref: a CRD's schema inlines every subschema")
		}
		tr.schema = r.schema.DeepCopy()
	}
	for j, f := range r.fields {
		b.addField(tr, pv, j, f)
	}
}

// addField resolves the j'th Field of tr, whose value is pv.
func (b *builder) addField(tr *resolvedType, pv reflect.Value, j int, f fieldRule) {
	t := tr.typ
	label := tr.label()
	field := fmt.Sprintf("Field %d", j)
	fp := reflect.ValueOf(f.pointer)
	if !fp.IsValid() || fp.Kind() != reflect.Pointer || fp.IsNil() {
		b.failf(label, "%s is a nil pointer, which names no field", field)
		return
	}
	ft := fp.Type().Elem()
	if pv.IsNil() {
		b.failf(label, "%s points into a nil %s, so it names none of its fields", field, pv.Type())
		return
	}
	addr := fp.Pointer()
	if addr == pv.Pointer() && ft == t {
		for _, c := range f.constraints {
			if c.kind == kindOptional || c.kind == kindRequired {
				b.failf(label, "%s: %s belongs to a field, not to the type %s", field, c.kind, t)
				continue
			}
			tr.own = append(tr.own, c)
		}
		return
	}
	switch {
	case tr.isSchema:
		b.failf(label, "%s: %s has a Schema, whose fields take no Rules", field, t)
		return
	case isBuiltin(t):
		b.failf(label, "%s: %s has a built-in schema, whose fields take no Rules", field, t)
		return
	case encodesItself(t) != "":
		b.failf(label, "%s: %s encodes itself with %s, so its fields take no Rules: give it a Schema", field, t, encodesItself(t))
		return
	case t.Kind() != reflect.Struct:
		b.failf(label, "%s, a *%s, names no field of %s, which is no struct", field, ft, t)
		return
	}
	hops, ok := locate(pv.Elem(), addr, ft)
	if !ok {
		b.failf(label, "%s, a *%s, names no field of the value given to Rules", field, ft)
		return
	}
	if len(hops) > 1 {
		owner := hops[len(hops)-1].owner
		b.failf(label, "%s names %s, a field of the nested %s: it belongs in %s's Rules", field, goPath(hops), owner, owner)
		return
	}
	h := hops[0]
	key := indexKey(h.index)
	if !slices.ContainsFunc(b.fieldsOf(t).fields, func(f jsonField) bool { return indexKey(f.index) == key }) {
		if owner, ok := b.namedEmbedded(t, h.index); ok {
			b.failf(label, "%s names %s, a field of %s, which encoding/json nests: it belongs in %s's Rules", field, h.goName(), owner, owner)
			return
		}
		b.failf(label, "%s names %s, which encoding/json doesn't encode: it is unexported, tagged json:\"-\", or hidden by another field of its name", field, h.goName())
		return
	}
	if tr.fields == nil {
		tr.fields = map[string]*resolvedField{}
	}
	fr, ok := tr.fields[key]
	if !ok {
		fr = &resolvedField{goName: h.goName()}
		tr.fields[key] = fr
	}
	fr.constraints = append(fr.constraints, f.constraints...)
}

// namedEmbedded returns the type of the embedded struct that encoding/json
// encodes as a property of t of its own, because its tag names it, and
// whose field index names.
func (b *builder) namedEmbedded(t reflect.Type, index []int) (reflect.Type, bool) {
	for _, f := range b.fieldsOf(t).fields {
		if len(f.index) < len(index) && slices.Equal(f.index, index[:len(f.index)]) {
			return deref(f.typ), true
		}
	}
	return nil, false
}

// unused reports the Rules of every type that the schemas built so far
// don't hold, which constrain nothing.
func (b *builder) unused(where string) {
	for _, tr := range b.order {
		if !tr.used {
			b.failf(tr.label(), "%s appears nowhere in %s, so these rules constrain nothing", tr.typ, where)
		}
	}
}

// fieldRules returns the rules of the field of struct t at index: those of
// each struct embedded along the way, innermost first, then t's own.
func (b *builder) fieldRules(t reflect.Type, index []int) []*resolvedField {
	var out []*resolvedField
	for j := range index {
		if tr := b.rules[t]; tr != nil {
			if fr, ok := tr.fields[indexKey(index[j:])]; ok {
				tr.used = true
				out = append(out, fr)
			}
		}
		t = deref(t.Field(index[j]).Type)
	}
	slices.Reverse(out)
	return out
}

func indexKey(index []int) string {
	var b strings.Builder
	for i, n := range index {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}

// hasRef reports whether s or any schema within it has a $ref.
func hasRef(s *apiextensionsv1.JSONSchemaProps) bool {
	if s == nil {
		return false
	}
	if s.Ref != nil {
		return true
	}
	if s.Items != nil && (hasRef(s.Items.Schema) || slices.ContainsFunc(s.Items.JSONSchemas, func(s apiextensionsv1.JSONSchemaProps) bool { return hasRef(&s) })) {
		return true
	}
	if s.AdditionalProperties != nil && hasRef(s.AdditionalProperties.Schema) {
		return true
	}
	if s.AdditionalItems != nil && hasRef(s.AdditionalItems.Schema) {
		return true
	}
	if hasRef(s.Not) {
		return true
	}
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{s.AllOf, s.AnyOf, s.OneOf} {
		for i := range list {
			if hasRef(&list[i]) {
				return true
			}
		}
	}
	for _, m := range []map[string]apiextensionsv1.JSONSchemaProps{s.Properties, s.PatternProperties, s.Definitions} {
		for _, p := range m {
			if hasRef(&p) {
				return true
			}
		}
	}
	for _, d := range s.Dependencies {
		if hasRef(d.Schema) {
			return true
		}
	}
	return false
}
