package crd

import (
	"regexp"
	"slices"
)

// FieldOf constrains one field, of type T, of a type given to Rules. Each
// constraint is a method whose value, if it takes one, has the field's
// type, so a misspelled constraint, or a value of the wrong type, doesn't
// compile. Each method returns a new FieldOf with the constraint added, so
// they chain. A constraint that doesn't fit the field's schema, such as
// Pattern on a number, compiles, and the builder reports it.
type FieldOf[T any] struct {
	field       *T
	constraints []constraint
}

// Field names the field field points to, in the value given to Rules, such
// as &spec.Size, so the methods of the FieldOf it returns can constrain it.
func Field[T any](field *T) FieldOf[T] { return FieldOf[T]{field: field} }

func (f FieldOf[T]) asField() fieldRule {
	return fieldRule{pointer: f.field, constraints: slices.Clone(f.constraints)}
}

func (f FieldOf[T]) with(c constraint) FieldOf[T] {
	f.constraints = append(slices.Clip(f.constraints), c)
	return f
}

// ListType is how server-side apply merges a list: as a whole, or as a set
// of scalars. ListMap makes a list a map keyed by its items' fields.
type ListType string

const (
	// AtomicList is replaced as a whole by the apply that sets it.
	AtomicList ListType = "atomic"
	// SetList is a set of scalars, each owned by the applies that set it.
	SetList ListType = "set"
)

// MapType is how server-side apply merges a map or a struct: as a whole,
// or field by field.
type MapType string

const (
	// AtomicMap is replaced as a whole by the apply that sets it.
	AtomicMap MapType = "atomic"
	// GranularMap merges field by field, each owned by the applies that
	// set it. It is how maps and structs merge unless told otherwise.
	GranularMap MapType = "granular"
)

// Description describes the field, which kubectl explain shows.
func (f FieldOf[T]) Description(text string) FieldOf[T] {
	return f.with(constraint{kind: kindDescription, text: text})
}

// Default is the value the API server gives the field when an object
// leaves it out. A field with a Default isn't required.
func (f FieldOf[T]) Default(v T) FieldOf[T] { return f.with(valued(kindDefault, v)) }

// Enum limits the field to values.
func (f FieldOf[T]) Enum(values ...T) FieldOf[T] {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	return f.with(enum(vs))
}

// Minimum is the least value of a number.
func (f FieldOf[T]) Minimum(v T) FieldOf[T] { return f.with(valued(kindMinimum, v)) }

// Maximum is the greatest value of a number.
func (f FieldOf[T]) Maximum(v T) FieldOf[T] { return f.with(valued(kindMaximum, v)) }

// ExclusiveMinimum makes the Minimum itself invalid.
func (f FieldOf[T]) ExclusiveMinimum() FieldOf[T] { return f.with(flag(kindExclusiveMinimum)) }

// ExclusiveMaximum makes the Maximum itself invalid.
func (f FieldOf[T]) ExclusiveMaximum() FieldOf[T] { return f.with(flag(kindExclusiveMaximum)) }

// MultipleOf makes a number valid only as a multiple of v.
func (f FieldOf[T]) MultipleOf(v T) FieldOf[T] { return f.with(valued(kindMultipleOf, v)) }

// MinLength is the fewest characters of a string.
func (f FieldOf[T]) MinLength(n int) FieldOf[T] { return f.with(count(kindMinLength, n)) }

// MaxLength is the most characters of a string.
func (f FieldOf[T]) MaxLength(n int) FieldOf[T] { return f.with(count(kindMaxLength, n)) }

// Pattern makes a string valid only when re matches it. The API server
// matches ECMA-262 regular expressions, whose common syntax Go's shares.
func (f FieldOf[T]) Pattern(re *regexp.Regexp) FieldOf[T] { return f.with(pattern(re)) }

// Format is the format of a string or a number, such as date-time or
// int32, which the API server checks.
func (f FieldOf[T]) Format(format string) FieldOf[T] { return f.with(formatted(format)) }

// MinItems is the fewest items of a list.
func (f FieldOf[T]) MinItems(n int) FieldOf[T] { return f.with(count(kindMinItems, n)) }

// MaxItems is the most items of a list.
func (f FieldOf[T]) MaxItems(n int) FieldOf[T] { return f.with(count(kindMaxItems, n)) }

// ListType is how server-side apply merges a list: AtomicList or SetList.
func (f FieldOf[T]) ListType(t ListType) FieldOf[T] { return f.with(listType(t)) }

// ListMap makes a list of objects a map, keyed by the items' fields named
// keys, which must be required or have a Default: server-side apply then
// merges it item by item, and the API server rejects two items with one
// key.
func (f FieldOf[T]) ListMap(keys ...string) FieldOf[T] { return f.with(listMap(keys)) }

// MapType is how server-side apply merges a map or a struct: AtomicMap or
// GranularMap.
func (f FieldOf[T]) MapType(t MapType) FieldOf[T] { return f.with(mapType(t)) }

// MinProperties is the fewest keys of a map or an object.
func (f FieldOf[T]) MinProperties(n int) FieldOf[T] { return f.with(count(kindMinProperties, n)) }

// MaxProperties is the most keys of a map or an object.
func (f FieldOf[T]) MaxProperties(n int) FieldOf[T] { return f.with(count(kindMaxProperties, n)) }

// Nullable lets the field be null.
func (f FieldOf[T]) Nullable() FieldOf[T] { return f.with(flag(kindNullable)) }

// Optional makes the field not required, whatever its json tag says.
func (f FieldOf[T]) Optional() FieldOf[T] { return f.with(flag(kindOptional)) }

// Required makes the field required, whatever its json tag says.
func (f FieldOf[T]) Required() FieldOf[T] { return f.with(flag(kindRequired)) }

// Validation adds a CEL rule on the field, in which self is the field's
// value, with the message the API server rejects an object that breaks it
// with. The API server compiles the rule when the CRD is applied.
func (f FieldOf[T]) Validation(rule, message string) FieldOf[T] {
	return f.with(celRule(rule, message))
}

// PreserveUnknownFields keeps the fields of an object that its schema
// doesn't name, which the API server otherwise prunes.
func (f FieldOf[T]) PreserveUnknownFields() FieldOf[T] {
	return f.with(flag(kindPreserveUnknownFields))
}

// EmbeddedResource says the field is a whole Kubernetes object, with
// apiVersion, kind and metadata, which the API server checks as such.
func (f FieldOf[T]) EmbeddedResource() FieldOf[T] { return f.with(flag(kindEmbeddedResource)) }
