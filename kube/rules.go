package kube

import (
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loam-dev/loam/domain/crd"
)

// TypeRules constrain one Go type's schema, and those of its fields,
// wherever the type appears in a Resource's Spec or Status, so a type
// held in several places is constrained once, and alike everywhere. Rules
// and Schema make them; a Resource takes at most one of either for a type.
type TypeRules struct {
	rules crd.Rules
}

// FieldRules are the constraints on one field. Every FieldOf is one, and
// nothing else is.
type FieldRules interface {
	fieldRules() crd.Field
}

// Rules constrains the fields of the type T, each named by a Field of a
// pointer into *value, such as kube.Field(&spec.Size) with value &spec.
// A field promoted from a struct T embeds is T's to constrain; a field of
// a struct T nests, such as &spec.Template.Port, is that struct's, and
// naming it here is a mistake that Resource.CRD reports. A Field of value
// itself constrains T's own schema.
//
// Rules reads nothing from *value but the pointers that lead to structs it
// embeds or nests: it only finds which field each pointer names. value is
// usually the address of a package-level variable.
func Rules[T any](value *T, fields ...FieldRules) TypeRules {
	r := crd.Rules{Value: value, Fields: make([]crd.Field, 0, len(fields))}
	for _, f := range fields {
		if f == nil {
			r.Fields = append(r.Fields, crd.Field{})
			continue
		}
		r.Fields = append(r.Fields, f.fieldRules())
	}
	return TypeRules{rules: r}
}

// Schema gives the type T its schema whole, in place of the one reflected
// from it. It is how a type that encodes itself, with a MarshalJSON or
// MarshalText method, gets a schema at all. value only names the type:
// it may be nil. The schema must be structural, as a CRD's is, with no
// $ref; the API server checks the rest when the CRD is applied.
func Schema[T any](value *T, schema apiextensionsv1.JSONSchemaProps) TypeRules {
	return TypeRules{rules: crd.Rules{Value: value, Schema: schema.DeepCopy()}}
}

// Description describes the type's schema, which kubectl explain shows
// wherever the type appears, unless a field of the type has a Description
// of its own. A description is a value, not a doc comment: a schema
// reflected at run time has no comments to read.
func (r TypeRules) Description(text string) TypeRules {
	return r.own(crd.Description(text))
}

// Validation adds a CEL rule on the type's schema, in which self is a
// value of the type, with the message the API server rejects an object
// that breaks it with. The API server compiles the rule when the CRD is
// applied.
func (r TypeRules) Validation(rule, message string) TypeRules {
	return r.own(crd.Validation(rule, message))
}

func (r TypeRules) own(c crd.Constraint) TypeRules {
	r.rules.Own = append(slices.Clip(r.rules.Own), c)
	return r
}
