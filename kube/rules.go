package kube

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loam-dev/loam/domain/crd"
)

// TypeRules constrain one Go type's schema, and those of its fields,
// wherever the type appears in a Resource's Spec or Status, so a type
// held in several places is constrained once, and alike everywhere. Rules
// and Schema make them; a Resource takes at most one of either for a type.
// Their Description and Validation methods describe the type's own schema
// and add a CEL rule on it.
type TypeRules = crd.TypeRules

// FieldRules are the constraints on one field. Every FieldOf is one, and
// nothing else is.
type FieldRules = crd.FieldRules

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
func Rules[T any](value *T, fields ...FieldRules) TypeRules { return crd.Rules(value, fields...) }

// Schema gives the type T its schema whole, in place of the one reflected
// from it. It is how a type that encodes itself, with a MarshalJSON or
// MarshalText method, gets a schema at all. value only names the type:
// it may be nil. The schema must be structural, as a CRD's is, with no
// $ref; the API server checks the rest when the CRD is applied.
func Schema[T any](value *T, schema apiextensionsv1.JSONSchemaProps) TypeRules {
	return crd.Schema(value, schema)
}
