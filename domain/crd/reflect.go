// Package crd generates a custom resource's CustomResourceDefinition from
// Go types: its names and scope, its printer columns, its scale
// subresource, and the OpenAPI v3.0 schema of its spec and status,
// reflected as encoding/json encodes them, with the constraints of Rules
// attached to types and their fields by pointer. Its typed API (Rules,
// Schema, Field and FieldOf's constraints, Column, Scale) is kube's: kube re-exports it, and kube.Resource.CRD builds a
// Definition.
//
// It is pure: it reads types with package reflect, reads no value but the
// pointers that locate fields, and does no I/O. It is named crd, not schema, so that importing it alongside
// apimachinery's runtime/schema needs no alias.
package crd

import (
	"errors"
	"fmt"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Reflect returns the schema of t, as encoding/json encodes it, with the
// constraints of rules. place names t in the error's messages, such as
// "spec". It returns one error naming every mistake it finds, each with
// its place; rules for a type that t doesn't hold are one of them.
func Reflect(t reflect.Type, place string, rules ...TypeRules) (apiextensionsv1.JSONSchemaProps, error) {
	b := newBuilder(rules)
	s := b.schema(t, place)
	b.unused("the schema")
	return *s.DeepCopy(), b.err()
}

// builder reflects schemas of types with one set of Rules, memoizing each
// type's schema, and collects every mistake it finds.
type builder struct {
	rules  map[reflect.Type]*resolvedType
	order  []*resolvedType
	memo   map[reflect.Type]*apiextensionsv1.JSONSchemaProps
	fields map[reflect.Type]structFields
	busy   map[reflect.Type]bool
	// nulled holds, for each struct type, the fields structSchema made
	// nullable because encoding/json may write them as null.
	nulled map[reflect.Type]map[string]bool
	errs   []error
}

func newBuilder(rules []TypeRules) *builder {
	b := &builder{
		rules:  map[reflect.Type]*resolvedType{},
		memo:   map[reflect.Type]*apiextensionsv1.JSONSchemaProps{},
		fields: map[reflect.Type]structFields{},
		busy:   map[reflect.Type]bool{},
		nulled: map[reflect.Type]map[string]bool{},
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
		b.check(&s, t, place)
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

// special reports whether t's schema is not its kind's: a Schema gives
// it, it is built in, or it encodes itself.
func (b *builder) special(t reflect.Type) bool {
	if tr := b.rules[t]; tr != nil && tr.schema != nil {
		return true
	}
	return isBuiltin(t) || encodesItself(t) != ""
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
