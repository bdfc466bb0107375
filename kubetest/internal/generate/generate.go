// Package generate makes values that a CRD's structural schema accepts,
// from a seeded source: the objects kubetest's explorer creates and the
// changes it makes to them (issue #25): Value makes one value, Steps a
// sequence of creates, updates, deletes and re-creates. The same seed
// gives the same values.
//
// It honours what a structural schema states about a value itself: its
// type, enum, minimum and maximum (exclusive or not), multipleOf,
// minLength and maxLength, pattern, the formats the API server checks
// (date-time, date, duration, int32, int64), minItems and maxItems,
// uniqueItems and the set and map list types, minProperties and
// maxProperties, required properties, additionalProperties,
// x-kubernetes-int-or-string and x-kubernetes-preserve-unknown-fields. It
// does not solve CEL rules or allOf, anyOf, oneOf and not: an object they
// reject is refused by the API server, which the explorer counts as a
// refused step, not a failure. A string field that names another object
// is drawn, with Refer, from the names of objects that exist.
package generate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Bounds on what a schema leaves open, so values stay small enough to
// read in a failure's report.
const (
	// maxItems bounds a list or a map whose schema has no maximum.
	maxItems = 3
	// maxString bounds a string whose schema has no maxLength.
	maxString = 12
	// maxRepeat bounds a pattern's *, + and {n,}.
	maxRepeat = 4
	// maxMinimum is the largest minItems, minProperties or minLength the
	// generator meets.
	maxMinimum = 1 << 12
	// tries is how often a value is generated again when it misses a
	// pattern or a list's uniqueness, before the generator gives up.
	tries = 50
)

// Generator makes values from a seeded source. It is not safe for
// concurrent use.
type Generator struct {
	rnd *rand.Rand
	// refs are the names a string field that names another object is
	// drawn from, by the field's path as value knows it: ".configMap".
	refs map[string][]string
}

// New returns a Generator whose values follow from seed.
func New(seed uint64) *Generator {
	return &Generator{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Refer makes the string field at path, such as "configMap" or
// "auth.secretName" from the root of the schema Value is given, name one
// of names: its value is drawn from them, or, one time in len(names)+1,
// made as any other string of its schema is, a name that is likely none
// of theirs, so that an object missing comes up too. It returns g.
func (g *Generator) Refer(path string, names []string) *Generator {
	if g.refs == nil {
		g.refs = map[string][]string{}
	}
	g.refs["."+path] = slices.Clone(names)
	return g
}

// Value returns a value s accepts, as encoding/json decodes JSON: a
// map[string]any, []any, string, int64, float64 or bool. Optional
// properties are each present with even odds. It fails, naming the
// schema's path, when s leaves no value it can build, such as a pattern
// it can't match or bounds that contradict each other.
func (g *Generator) Value(s *apiextensionsv1.JSONSchemaProps) (any, error) {
	return g.value(s, "")
}

func (g *Generator) value(s *apiextensionsv1.JSONSchemaProps, path string) (any, error) {
	if names := g.refs[path]; len(names) > 0 {
		if i := g.rnd.IntN(len(names) + 1); i < len(names) {
			return names[i], nil
		}
	}
	if len(s.Enum) > 0 {
		var v any
		if err := json.Unmarshal(s.Enum[g.rnd.IntN(len(s.Enum))].Raw, &v); err != nil {
			return nil, fmt.Errorf("%s: enum: %w", where(path), err)
		}
		return number(v), nil
	}
	if s.XIntOrString {
		if g.rnd.IntN(2) == 0 {
			return g.integer(s, path)
		}
		return g.str(s, path)
	}
	switch s.Type {
	case "object":
		return g.object(s, path)
	case "array":
		return g.array(s, path)
	case "string":
		return g.str(s, path)
	case "integer":
		return g.integer(s, path)
	case "number":
		return g.float(s, path)
	case "boolean":
		return g.rnd.IntN(2) == 0, nil
	case "":
		if s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
			return map[string]any{}, nil
		}
	}
	return nil, fmt.Errorf("%s: type %q: want object, array, string, integer, number or boolean", where(path), s.Type)
}

func where(path string) string {
	if path == "" {
		return "the schema's root"
	}
	return path
}

// number turns a JSON number encoding/json decoded as a float64 into an
// int64 when it is whole, as the API server's decoder does.
func number(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return v
}

func (g *Generator) object(s *apiextensionsv1.JSONSchemaProps, path string) (any, error) {
	out := map[string]any{}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names) // map order would make the values depend on more than the seed
	for _, name := range names {
		if !slices.Contains(s.Required, name) && g.rnd.IntN(2) == 0 {
			continue
		}
		if err := g.property(s, name, path, out); err != nil {
			return nil, err
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		lo, hi, err := bounds(path, "Properties", s.MinProperties, s.MaxProperties)
		if err != nil {
			return nil, err
		}
		want := lo + g.rnd.IntN(hi-lo+1)
		for i := 0; len(out) < want && i < tries*want; i++ {
			key := g.word(1, 8)
			if _, taken := out[key]; taken {
				continue
			}
			v, err := g.value(s.AdditionalProperties.Schema, path+"["+key+"]")
			if err != nil {
				return nil, err
			}
			out[key] = v
		}
	}
	if s.MinProperties != nil && int64(len(out)) < *s.MinProperties {
		// Optional properties left out: put them back until there are
		// enough.
		for _, name := range names {
			if _, ok := out[name]; ok || int64(len(out)) >= *s.MinProperties {
				continue
			}
			if err := g.property(s, name, path, out); err != nil {
				return nil, err
			}
		}
		if int64(len(out)) < *s.MinProperties {
			return nil, fmt.Errorf("%s: minProperties %d: only %d properties can be made", where(path), *s.MinProperties, len(out))
		}
	}
	return out, nil
}

// property sets out[name] to a value of s's property name.
func (g *Generator) property(s *apiextensionsv1.JSONSchemaProps, name, path string, out map[string]any) error {
	prop := s.Properties[name]
	v, err := g.value(&prop, path+"."+name)
	if err != nil {
		return err
	}
	out[name] = v
	return nil
}

// bounds returns the counts a list, a map or a string may have, lo to
// hi, from its schema's min and max of what, with maxItems above lo when
// there is no maximum. It fails on a negative count or a maximum below
// the minimum.
func bounds(path, what string, minimum, maximum *int64) (lo, hi int, err error) {
	if minimum != nil {
		if *minimum < 0 || *minimum > maxMinimum {
			return 0, 0, fmt.Errorf("%s: min%s %d: want 0 to %d", where(path), what, *minimum, maxMinimum)
		}
		lo = int(*minimum)
	}
	hi = lo + maxItems
	if maximum != nil {
		if *maximum < int64(lo) {
			return 0, 0, fmt.Errorf("%s: max%s %d is below min%s %d", where(path), what, *maximum, what, lo)
		}
		hi = min(hi, int(*maximum))
	}
	return lo, hi, nil
}

func (g *Generator) array(s *apiextensionsv1.JSONSchemaProps, path string) (any, error) {
	if s.Items == nil || s.Items.Schema == nil {
		return nil, fmt.Errorf("%s: an array with no items schema", where(path))
	}
	lo, hi, err := bounds(path, "Items", s.MinItems, s.MaxItems)
	if err != nil {
		return nil, err
	}
	want := lo + g.rnd.IntN(hi-lo+1)
	listType := ""
	if s.XListType != nil {
		listType = *s.XListType
	}
	unique := s.UniqueItems || listType == "set"
	out := []any{}
	seen := map[string]bool{}
	for i := 0; len(out) < want; i++ {
		if i >= tries*max(want, 1) {
			return nil, fmt.Errorf("%s: could make only %d distinct items of %d", where(path), len(out), want)
		}
		v, err := g.value(s.Items.Schema, fmt.Sprintf("%s[%d]", path, len(out)))
		if err != nil {
			return nil, err
		}
		key, err := identity(v, unique, listType, s.XListMapKeys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where(path), err)
		}
		if key != "" {
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, v)
	}
	return out, nil
}

// identity returns what makes an item of a list distinct: the whole item
// for a set or unique items, its keys' values for a map list, and ""
// when items needn't be distinct.
func identity(v any, unique bool, listType string, keys []string) (string, error) {
	var of any
	switch {
	case listType == "map":
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("a map list's item is a %T", v)
		}
		vals := make([]any, len(keys))
		for i, k := range keys {
			vals[i] = m[k]
		}
		of = vals
	case unique:
		of = v
	default:
		return "", nil
	}
	b, err := json.Marshal(of)
	return string(b), err
}
