package kube

import "github.com/loam-dev/loam/domain/crd"

// FieldOf constrains one field, of type T, of a type given to Rules. Each
// constraint is a method whose value, if it takes one, has the field's
// type, so a misspelled constraint, or a value of the wrong type, doesn't
// compile. Each method returns a new FieldOf with the constraint added, so
// they chain. A constraint that doesn't fit the field's schema, such as
// Pattern on a number, compiles, and Resource.CRD reports it. Its methods
// are those of domain/crd's FieldOf: Description, Default, Enum, Minimum,
// Maximum, ExclusiveMinimum, ExclusiveMaximum, MultipleOf, MinLength,
// MaxLength, Pattern, Format, MinItems, MaxItems, ListType, ListMap,
// MapType, MinProperties, MaxProperties, Nullable, Optional, Required,
// Validation, PreserveUnknownFields and EmbeddedResource.
type FieldOf[T any] = crd.FieldOf[T]

// Field names the field field points to, in the value given to Rules, such
// as &spec.Size, so the methods of the FieldOf it returns can constrain it.
func Field[T any](field *T) FieldOf[T] { return crd.Field(field) }

// ListType is how server-side apply merges a list: as a whole, or as a set
// of scalars. FieldOf.ListMap makes a list a map keyed by its items'
// fields.
type ListType = crd.ListType

const (
	// AtomicList is replaced as a whole by the apply that sets it.
	AtomicList = crd.AtomicList
	// SetList is a set of scalars, each owned by the applies that set it.
	SetList = crd.SetList
)

// MapType is how server-side apply merges a map or a struct: as a whole,
// or field by field.
type MapType = crd.MapType

const (
	// AtomicMap is replaced as a whole by the apply that sets it.
	AtomicMap = crd.AtomicMap
	// GranularMap merges field by field, each owned by the applies that
	// set it. It is how maps and structs merge unless told otherwise.
	GranularMap = crd.GranularMap
)
