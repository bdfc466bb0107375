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

// kind says which constraint a constraint is. Its name, as String returns
// it, is the name of the FieldOf (or TypeRules) method that makes it, so a
// mistake names what the end user wrote.
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

// constraint is one rule on a schema, such as a minimum or a pattern.
// FieldOf's and TypeRules' methods make them; a constraint whose value is
// bad (a nil pattern, a negative length) carries the mistake to the
// builder, which reports it with the place it applies to.
type constraint struct {
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

// String names the constraint as the method that makes it.
func (c constraint) String() string { return c.kind.String() }

// flag is a constraint of kind k that holds no value.
func flag(k kind) constraint { return constraint{kind: k} }

// valued is a constraint of kind k with the value v: a Default, or a
// Minimum, Maximum or MultipleOf, whose v must encode as a JSON number.
func valued(k kind, v any) constraint { return constraint{kind: k, value: v, hasValue: true} }

// enum limits the values to vs, each as encoding/json encodes it.
func enum(vs []any) constraint {
	c := constraint{kind: kindEnum, values: vs}
	if len(vs) == 0 {
		c.mistake = "Enum needs at least one value"
	}
	return c
}

// pattern is re as a schema's pattern.
func pattern(re *regexp.Regexp) constraint {
	c := constraint{kind: kindPattern}
	if re == nil {
		c.mistake = "Pattern(nil) has no regular expression"
		return c
	}
	c.text = re.String()
	return c
}

// formatted sets the schema's format, such as date-time or int32.
func formatted(format string) constraint {
	c := constraint{kind: kindFormat, text: format}
	if format == "" {
		c.mistake = `Format("") names no format`
	}
	return c
}

// listType sets x-kubernetes-list-type to "atomic" or "set"; a map list is
// listMap's.
func listType(t ListType) constraint {
	c := constraint{kind: kindListType, text: string(t)}
	switch t {
	case AtomicList, SetList:
	case "map":
		c.mistake = `ListType("map") has no keys: use ListMap`
	default:
		c.mistake = fmt.Sprintf("ListType(%q) is neither atomic nor set", string(t))
	}
	return c
}

// listMap makes an array a map keyed by the items' fields named keys, for
// server-side apply: x-kubernetes-list-type map with
// x-kubernetes-list-map-keys.
func listMap(keys []string) constraint {
	c := constraint{kind: kindListMap, texts: keys}
	if len(keys) == 0 {
		c.mistake = "ListMap needs at least one key"
	}
	return c
}

// mapType sets x-kubernetes-map-type to "atomic" or "granular".
func mapType(t MapType) constraint {
	c := constraint{kind: kindMapType, text: string(t)}
	if t != AtomicMap && t != GranularMap {
		c.mistake = fmt.Sprintf("MapType(%q) is neither atomic nor granular", string(t))
	}
	return c
}

// celRule adds a CEL rule, with the message the API server returns when
// an object breaks it, to x-kubernetes-validations. The API server
// compiles the rule when the CRD is applied; the builder doesn't.
func celRule(rule, message string) constraint {
	c := constraint{kind: kindValidation, text: rule, message: message}
	if rule == "" {
		c.mistake = "Validation has an empty rule"
	}
	return c
}

// count is a constraint of kind k on a length or a number of items or
// properties, which can't be negative.
func count(k kind, n int) constraint {
	c := constraint{kind: k, n: int64(n)}
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
func (c constraint) apply(s *apiextensionsv1.JSONSchemaProps, quoted bool) error {
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
		values := make([]apiextensionsv1.JSON, 0, len(c.values))
		for _, v := range c.values {
			j, err := encode(v, quoted)
			if err != nil {
				return fmt.Errorf("%s: %w", c.kind, err)
			}
			values = append(values, *j)
		}
		s.Enum = values
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
