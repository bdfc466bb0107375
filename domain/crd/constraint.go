package crd

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// kind says which constraint a Constraint is. Its name, as String returns
// it, is the name of kube.FieldOf's method that makes it, so a mistake
// names what the end user wrote.
type kind int

const (
	kindDescription kind = iota + 1
	kindDefault
	kindEnum
	kindMinimum
	kindMaximum
	kindExclusiveMinimum
	kindExclusiveMaximum
	kindMultipleOf
	kindMinLength
	kindMaxLength
	kindPattern
	kindFormat
	kindMinItems
	kindMaxItems
	kindListType
	kindListMap
	kindMapType
	kindMinProperties
	kindMaxProperties
	kindNullable
	kindOptional
	kindRequired
	kindValidation
	kindPreserveUnknownFields
	kindEmbeddedResource
)

var kindNames = map[kind]string{
	kindDescription:           "Description",
	kindDefault:               "Default",
	kindEnum:                  "Enum",
	kindMinimum:               "Minimum",
	kindMaximum:               "Maximum",
	kindExclusiveMinimum:      "ExclusiveMinimum",
	kindExclusiveMaximum:      "ExclusiveMaximum",
	kindMultipleOf:            "MultipleOf",
	kindMinLength:             "MinLength",
	kindMaxLength:             "MaxLength",
	kindPattern:               "Pattern",
	kindFormat:                "Format",
	kindMinItems:              "MinItems",
	kindMaxItems:              "MaxItems",
	kindListType:              "ListType",
	kindListMap:               "ListMap",
	kindMapType:               "MapType",
	kindMinProperties:         "MinProperties",
	kindMaxProperties:         "MaxProperties",
	kindNullable:              "Nullable",
	kindOptional:              "Optional",
	kindRequired:              "Required",
	kindValidation:            "Validation",
	kindPreserveUnknownFields: "PreserveUnknownFields",
	kindEmbeddedResource:      "EmbeddedResource",
}

func (k kind) String() string { return kindNames[k] }

// fits reports whether a constraint of kind k means anything on a schema
// of type t, as typeOf names types. A constraint that fits no type of
// schema, such as Pattern on a number, is a mistake, not a no-op.
func (k kind) fits(t string) bool {
	switch k {
	case kindMinimum, kindMaximum, kindExclusiveMinimum, kindExclusiveMaximum, kindMultipleOf:
		return t == "integer" || t == "number"
	case kindMinLength, kindMaxLength, kindPattern:
		return t == "string"
	case kindFormat:
		return t == "string" || t == "integer" || t == "number"
	case kindMinItems, kindMaxItems, kindListType, kindListMap:
		return t == "array"
	case kindMinProperties, kindMaxProperties, kindMapType, kindEmbeddedResource:
		return t == "object"
	case kindPreserveUnknownFields:
		return t == "object" || t == "any"
	}
	return true
}

// Constraint is one rule on a schema, such as a minimum or a pattern. The
// functions of this file make them; a Constraint whose value is bad (a
// nil pattern, a negative length) carries the mistake to Reflect, which
// reports it with the place it applies to.
type Constraint struct {
	kind     kind
	value    any
	values   []any
	n        int64
	text     string
	texts    []string
	message  string
	mistake  string
	hasValue bool
}

// String names the constraint as kube.FieldOf's method that makes it.
func (c Constraint) String() string { return c.kind.String() }

// Description sets the schema's description, which kubectl explain shows.
func Description(text string) Constraint {
	return Constraint{kind: kindDescription, text: text}
}

// Default sets the schema's default to v as encoding/json encodes it.
func Default(v any) Constraint { return Constraint{kind: kindDefault, value: v, hasValue: true} }

// Enum limits the values to vs, each as encoding/json encodes it.
func Enum(vs ...any) Constraint {
	c := Constraint{kind: kindEnum, values: vs}
	if len(vs) == 0 {
		c.mistake = "Enum needs at least one value"
	}
	return c
}

// Minimum sets the least value a number may have: v, which must encode as
// a JSON number.
func Minimum(v any) Constraint { return Constraint{kind: kindMinimum, value: v, hasValue: true} }

// Maximum sets the greatest value a number may have: v, which must encode
// as a JSON number.
func Maximum(v any) Constraint { return Constraint{kind: kindMaximum, value: v, hasValue: true} }

// ExclusiveMinimum makes the Minimum itself invalid.
func ExclusiveMinimum() Constraint { return Constraint{kind: kindExclusiveMinimum} }

// ExclusiveMaximum makes the Maximum itself invalid.
func ExclusiveMaximum() Constraint { return Constraint{kind: kindExclusiveMaximum} }

// MultipleOf makes a number valid only as a multiple of v, which must be a
// positive JSON number.
func MultipleOf(v any) Constraint { return Constraint{kind: kindMultipleOf, value: v, hasValue: true} }

// MinLength sets the fewest characters a string may have.
func MinLength(n int) Constraint { return count(kindMinLength, n) }

// MaxLength sets the most characters a string may have.
func MaxLength(n int) Constraint { return count(kindMaxLength, n) }

// Pattern makes a string valid only when re matches it. The API server
// matches with ECMA-262 regular expressions, whose common syntax Go's
// shares.
func Pattern(re *regexp.Regexp) Constraint {
	c := Constraint{kind: kindPattern}
	if re == nil {
		c.mistake = "Pattern(nil) has no regular expression"
		return c
	}
	c.text = re.String()
	return c
}

// Format sets the schema's format, such as date-time or int32.
func Format(format string) Constraint {
	c := Constraint{kind: kindFormat, text: format}
	if format == "" {
		c.mistake = `Format("") names no format`
	}
	return c
}

// MinItems sets the fewest items an array may have.
func MinItems(n int) Constraint { return count(kindMinItems, n) }

// MaxItems sets the most items an array may have.
func MaxItems(n int) Constraint { return count(kindMaxItems, n) }

// ListType sets x-kubernetes-list-type to "atomic" or "set"; a map list is
// ListMap's.
func ListType(t string) Constraint {
	c := Constraint{kind: kindListType, text: t}
	switch t {
	case "atomic", "set":
	case "map":
		c.mistake = `ListType("map") has no keys: use ListMap`
	default:
		c.mistake = fmt.Sprintf("ListType(%q) is neither atomic nor set", t)
	}
	return c
}

// ListMap makes an array a map keyed by the items' fields named keys, for
// server-side apply: x-kubernetes-list-type map with
// x-kubernetes-list-map-keys.
func ListMap(keys ...string) Constraint {
	c := Constraint{kind: kindListMap, texts: keys}
	if len(keys) == 0 {
		c.mistake = "ListMap needs at least one key"
	}
	return c
}

// MapType sets x-kubernetes-map-type to "atomic" or "granular".
func MapType(t string) Constraint {
	c := Constraint{kind: kindMapType, text: t}
	if t != "atomic" && t != "granular" {
		c.mistake = fmt.Sprintf("MapType(%q) is neither atomic nor granular", t)
	}
	return c
}

// MinProperties sets the fewest properties an object may have.
func MinProperties(n int) Constraint { return count(kindMinProperties, n) }

// MaxProperties sets the most properties an object may have.
func MaxProperties(n int) Constraint { return count(kindMaxProperties, n) }

// Nullable lets the value be null.
func Nullable() Constraint { return Constraint{kind: kindNullable} }

// Optional makes a field not required, whatever its json tag says.
func Optional() Constraint { return Constraint{kind: kindOptional} }

// Required makes a field required, whatever its json tag says.
func Required() Constraint { return Constraint{kind: kindRequired} }

// Validation adds a CEL rule, with the message the API server returns when
// an object breaks it, to x-kubernetes-validations. The API server compiles
// the rule when the CRD is applied; Reflect doesn't.
func Validation(rule, message string) Constraint {
	c := Constraint{kind: kindValidation, text: rule, message: message}
	if rule == "" {
		c.mistake = "Validation has an empty rule"
	}
	return c
}

// PreserveUnknownFields sets x-kubernetes-preserve-unknown-fields, so the
// API server keeps fields the schema doesn't name.
func PreserveUnknownFields() Constraint { return Constraint{kind: kindPreserveUnknownFields} }

// EmbeddedResource sets x-kubernetes-embedded-resource: the object is a
// whole Kubernetes object, with apiVersion, kind and metadata.
func EmbeddedResource() Constraint { return Constraint{kind: kindEmbeddedResource} }

func count(k kind, n int) Constraint {
	c := Constraint{kind: k, n: int64(n)}
	if n < 0 {
		c.mistake = fmt.Sprintf("%s(%d) is negative", k, n)
	}
	return c
}

// typeOf names the type of a schema for fits and for messages: its type,
// or int-or-string, or any for a schema that takes every value.
func typeOf(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.Type != "":
		return s.Type
	case s.XIntOrString:
		return "int-or-string"
	}
	return "any"
}

// article names a schema's type with its article, for messages.
func article(t string) string {
	switch t {
	case "integer", "array", "object", "int-or-string":
		return "an " + t
	case "any":
		return "a value of any type"
	}
	return "a " + t
}

// apply sets c on s. quoted says the field is encoded with the json
// string option, so a value the constraint holds is encoded as a string
// too. It returns the mistake that keeps c from applying, or nil.
func (c Constraint) apply(s *apiextensionsv1.JSONSchemaProps, quoted bool) error {
	if c.mistake != "" {
		return errors.New(c.mistake)
	}
	if t := typeOf(s); !c.kind.fits(t) {
		return fmt.Errorf("%s doesn't fit %s", c.kind, article(t))
	}
	switch c.kind {
	case kindDescription:
		s.Description = c.text
	case kindDefault:
		v, err := encode(c.value, quoted)
		if err != nil {
			return fmt.Errorf("%s: %w", c.kind, err)
		}
		s.Default = v
	case kindEnum:
		enum := make([]apiextensionsv1.JSON, 0, len(c.values))
		for _, v := range c.values {
			j, err := encode(v, quoted)
			if err != nil {
				return fmt.Errorf("%s: %w", c.kind, err)
			}
			enum = append(enum, *j)
		}
		s.Enum = enum
	case kindMinimum, kindMaximum, kindMultipleOf:
		f, err := number(c.value)
		if err != nil {
			return fmt.Errorf("%s: %w", c.kind, err)
		}
		switch c.kind {
		case kindMinimum:
			s.Minimum = &f
		case kindMaximum:
			s.Maximum = &f
		default:
			if f <= 0 {
				return fmt.Errorf("%s(%v) is not positive", c.kind, f)
			}
			s.MultipleOf = &f
		}
	case kindExclusiveMinimum:
		s.ExclusiveMinimum = true
	case kindExclusiveMaximum:
		s.ExclusiveMaximum = true
	case kindMinLength:
		s.MinLength = ptr(c.n)
	case kindMaxLength:
		s.MaxLength = ptr(c.n)
	case kindPattern:
		s.Pattern = c.text
	case kindFormat:
		s.Format = c.text
	case kindMinItems:
		s.MinItems = ptr(c.n)
	case kindMaxItems:
		s.MaxItems = ptr(c.n)
	case kindListType:
		s.XListType = ptr(c.text)
		s.XListMapKeys = nil
	case kindListMap:
		s.XListType = ptr("map")
		s.XListMapKeys = append([]string(nil), c.texts...)
	case kindMapType:
		s.XMapType = ptr(c.text)
	case kindMinProperties:
		s.MinProperties = ptr(c.n)
	case kindMaxProperties:
		s.MaxProperties = ptr(c.n)
	case kindNullable:
		s.Nullable = true
	case kindValidation:
		s.XValidations = append(slices.Clip(s.XValidations), apiextensionsv1.ValidationRule{Rule: c.text, Message: c.message})
	case kindPreserveUnknownFields:
		s.XPreserveUnknownFields = ptr(true)
	case kindEmbeddedResource:
		s.XEmbeddedResource = true
	case kindOptional, kindRequired:
		// A field's, not its schema's: the struct that holds the field
		// decides its required list.
	}
	return nil
}

// encode returns v as encoding/json encodes it, inside a JSON string when
// quoted, as the json string option encodes a field.
func encode(v any, quoted bool) (*apiextensionsv1.JSON, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if quoted && len(raw) > 0 && raw[0] != '{' && raw[0] != '[' && string(raw) != "null" {
		if raw, err = json.Marshal(string(raw)); err != nil {
			return nil, err
		}
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}

// number returns v as a float64, when encoding/json encodes it as a number.
func number(v any) (float64, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not a number", raw)
	}
	return f, nil
}

func ptr[T any](v T) *T { return &v }
