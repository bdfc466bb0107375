// Package crd generates a custom resource's CustomResourceDefinition from
// Go types: its names and scope, its printer columns, and the OpenAPI v3.0
// schema of its spec and status, reflected as encoding/json encodes them,
// with the constraints of Rules attached to types and their fields by
// pointer.
//
// It is pure: it reads types with package reflect, reads no value but the
// pointers that locate fields, and does no I/O. kube.Resource is its typed
// facade. It is named crd, not schema, so that importing it alongside
// apimachinery's runtime/schema needs no alias.
package crd

import (
	"errors"
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

// Reflect returns the schema of t, as encoding/json encodes it, with the
// constraints of rules. place names t in the error's messages, such as
// "spec". It returns one error naming every mistake it finds, each with
// its place; rules for a type that t doesn't hold are one of them.
func Reflect(t reflect.Type, place string, rules ...Rules) (apiextensionsv1.JSONSchemaProps, error) {
	b := newBuilder(rules)
	s := b.schema(t, place)
	b.unused("the schema")
	return *s.DeepCopy(), b.err()
}

// builder reflects schemas of types with one set of Rules, memoizing each
// type's schema, and collects every mistake it finds.
type builder struct {
	rules  map[reflect.Type]*typeRules
	order  []*typeRules
	memo   map[reflect.Type]*apiextensionsv1.JSONSchemaProps
	fields map[reflect.Type]structFields
	busy   map[reflect.Type]bool
	errs   []error
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

func newBuilder(rules []Rules) *builder {
	b := &builder{
		rules:  map[reflect.Type]*typeRules{},
		memo:   map[reflect.Type]*apiextensionsv1.JSONSchemaProps{},
		fields: map[reflect.Type]structFields{},
		busy:   map[reflect.Type]bool{},
	}
	for i, r := range rules {
		b.add(i, r)
	}
	return b
}

func (b *builder) failf(place, format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%s: %s", place, fmt.Sprintf(format, args...)))
}

func (b *builder) err() error { return errors.Join(b.errs...) }

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

func (b *builder) fieldsOf(t reflect.Type) structFields {
	sf, ok := b.fields[t]
	if !ok {
		sf = fieldsOf(t)
		b.fields[t] = sf
	}
	return sf
}

// schema returns the schema of t at place. Schemas of one type share
// their subschemas, so the caller may set its fields, but must not change
// what they point to; append to a slice of it only after slices.Clip.
// Reflect and CRD copy the whole schema once, at the end.
func (b *builder) schema(t reflect.Type, place string) apiextensionsv1.JSONSchemaProps {
	t = deref(t)
	if s, ok := b.memo[t]; ok {
		return *s
	}
	if b.busy[t] {
		b.failf(place, "%s contains itself, which a schema without $ref can't express", t)
		return apiextensionsv1.JSONSchemaProps{}
	}
	b.busy[t] = true
	s := b.build(t, place)
	delete(b.busy, t)
	b.memo[t] = &s
	return s
}

// build reflects the schema of t, which is no pointer, and applies t's own
// constraints to it.
func (b *builder) build(t reflect.Type, place string) apiextensionsv1.JSONSchemaProps {
	tr := b.rules[t]
	var s apiextensionsv1.JSONSchemaProps
	switch bs, isBuiltin := builtin(t); {
	case tr != nil && tr.schema != nil:
		s = *tr.schema.DeepCopy()
	case isBuiltin:
		s = bs
	case t.Kind() == reflect.Interface:
		// An interface's methods say nothing of how the value it holds
		// encodes.
		s = b.byKind(t, place)
	case encodesItself(t) != "":
		b.failf(place, "%s encodes itself with %s and has no Schema", t, encodesItself(t))
	default:
		s = b.byKind(t, place)
	}
	if tr != nil {
		tr.used = true
		for _, c := range tr.own {
			if err := c.apply(&s, false); err != nil {
				b.failf(place, "%s: %v", tr.label(), err)
			}
		}
		b.check(&s, place)
	}
	return s
}

// byKind reflects the schema of t from its kind, as encoding/json encodes
// a type that doesn't encode itself.
func (b *builder) byKind(t reflect.Type, place string) apiextensionsv1.JSONSchemaProps {
	switch t.Kind() {
	case reflect.Bool:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case reflect.Int32:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}
	case reflect.Int64:
		return apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	case reflect.Int, reflect.Int8, reflect.Int16,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return apiextensionsv1.JSONSchemaProps{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return apiextensionsv1.JSONSchemaProps{Type: "number"}
	case reflect.String:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && encodesItself(t.Elem()) == "" {
			return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "byte"}
		}
		items := b.schema(t.Elem(), place+"[*]")
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case reflect.Array:
		items := b.schema(t.Elem(), place+"[*]")
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case reflect.Map:
		if k := t.Key(); k.Kind() != reflect.String && !k.Implements(textMarshaler) {
			b.failf(place, "%s is a map whose keys aren't strings", t)
			return apiextensionsv1.JSONSchemaProps{Type: "object"}
		}
		values := b.schema(t.Elem(), place+"[*]")
		return apiextensionsv1.JSONSchemaProps{
			Type:                 "object",
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &values},
		}
	case reflect.Struct:
		return b.structSchema(t, place)
	case reflect.Interface:
		b.failf(place, "%s is an interface, whose encoding depends on the value it holds: use a concrete type, or apiextensionsv1.JSON for any JSON", t)
	case reflect.Chan:
		b.failf(place, "%s is a channel, which encoding/json can't encode", t)
	case reflect.Func:
		b.failf(place, "%s is a function, which encoding/json can't encode", t)
	default:
		b.failf(place, "%s is a %s, which encoding/json can't encode", t, t.Kind())
	}
	return apiextensionsv1.JSONSchemaProps{}
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

// special reports whether t's schema is not its kind's: a Schema gives
// it, it is built in, or it encodes itself.
func (b *builder) special(t reflect.Type) bool {
	if tr := b.rules[t]; tr != nil && tr.schema != nil {
		return true
	}
	return isBuiltin(t) || encodesItself(t) != ""
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

func isBuiltin(t reflect.Type) bool {
	_, ok := builtin(t)
	return ok
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
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
