package crd

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Rules constrain one Go type wherever it appears: its own schema, and the
// schemas of its fields, each named by a pointer into Value.
type Rules struct {
	// Value is a pointer to a value of the type. Fields' pointers point
	// into it; Reflect reads none of it but the pointers that lead to an
	// embedded or nested struct.
	Value any
	// Own constrains the type's own schema.
	Own []Constraint
	// Fields constrain the type's fields, those promoted from embedded
	// structs included. A Field whose Pointer is Value itself constrains
	// the type's own schema, as Own does.
	Fields []Field
	// Schema, when not nil, is the type's whole schema, used in place of
	// the one reflected from it. It is how a type that encodes itself gets
	// a schema. Own still applies to it; Fields must be empty.
	Schema *apiextensionsv1.JSONSchemaProps
}

// Field constrains one field of a Rules' type.
type Field struct {
	// Pointer is a pointer to the field, in the Rules' Value.
	Pointer any
	// Constraints apply to the field's schema, in order.
	Constraints []Constraint
}

// typeRules are the Rules of one type, with their fields resolved to
// index paths.
type typeRules struct {
	index    int
	typ      reflect.Type
	value    reflect.Value // the pointer Rules were given
	own      []Constraint
	fields   map[string]*fieldRules
	schema   *apiextensionsv1.JSONSchemaProps
	used     bool
	isSchema bool
}

// fieldRules are the constraints on one field of a type.
type fieldRules struct {
	goName      string
	constraints []Constraint
}

func (r *typeRules) label() string {
	return fmt.Sprintf("Rules[%d] (%s)", r.index, r.typ)
}

// add resolves the Rules at index i of the list.
func (b *builder) add(i int, r Rules) {
	label := fmt.Sprintf("Rules[%d]", i)
	pv := reflect.ValueOf(r.Value)
	if !pv.IsValid() || pv.Kind() != reflect.Pointer {
		b.failf(label, "has no pointer to a value of the type it constrains")
		return
	}
	t := pv.Type().Elem()
	tr := &typeRules{index: i, typ: t, value: pv, own: slices.Clone(r.Own), schema: r.Schema, isSchema: r.Schema != nil}
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
	if r.Schema != nil {
		if hasRef(r.Schema) {
			b.failf(label, "the Schema has a $ref: a CRD's schema inlines every subschema")
		}
		tr.schema = r.Schema.DeepCopy()
	}
	for j, f := range r.Fields {
		b.addField(tr, pv, j, f)
	}
}

// addField resolves the j'th Field of tr, whose value is pv.
func (b *builder) addField(tr *typeRules, pv reflect.Value, j int, f Field) {
	t := tr.typ
	label := tr.label()
	field := fmt.Sprintf("Field %d", j)
	fp := reflect.ValueOf(f.Pointer)
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
		for _, c := range f.Constraints {
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
		tr.fields = map[string]*fieldRules{}
	}
	fr, ok := tr.fields[key]
	if !ok {
		fr = &fieldRules{goName: h.goName()}
		tr.fields[key] = fr
	}
	fr.constraints = append(fr.constraints, f.Constraints...)
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
func (b *builder) fieldRules(t reflect.Type, index []int) []*fieldRules {
	var out []*fieldRules
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
