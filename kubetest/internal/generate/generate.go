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
// wasted step, not a failure.
package generate

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"
	"unicode"

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
}

// New returns a Generator whose values follow from seed.
func New(seed uint64) *Generator {
	return &Generator{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
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

func (g *Generator) integer(s *apiextensionsv1.JSONSchemaProps, path string) (any, error) {
	lo, hi := int64(-1000), int64(1000)
	switch s.Format {
	case "int32":
		lo, hi = max(lo, math.MinInt32), min(hi, math.MaxInt32)
	}
	if s.Minimum != nil {
		lo = int64(math.Ceil(*s.Minimum))
		if s.ExclusiveMinimum && float64(lo) == *s.Minimum {
			lo++
		}
		hi = max(hi, lo+1000)
	}
	if s.Maximum != nil {
		hi = int64(math.Floor(*s.Maximum))
		if s.ExclusiveMaximum && float64(hi) == *s.Maximum {
			hi--
		}
		if s.Minimum == nil {
			lo = min(lo, hi-1000)
		}
	}
	step := int64(1)
	if s.MultipleOf != nil {
		step = int64(*s.MultipleOf)
		if step <= 0 || float64(step) != *s.MultipleOf {
			return nil, fmt.Errorf("%s: multipleOf %v: want a positive integer", where(path), *s.MultipleOf)
		}
		// The multiples of step within [lo, hi].
		lo = ceilDiv(lo, step) * step
	}
	if lo > hi {
		return nil, fmt.Errorf("%s: no integer within [%d, %d]", where(path), lo, hi)
	}
	return lo + step*g.rnd.Int64N((hi-lo)/step+1), nil
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

func (g *Generator) float(s *apiextensionsv1.JSONSchemaProps, path string) (any, error) {
	if s.MultipleOf != nil {
		// Whole multiples of it: integer's bounds and steps.
		v, err := g.integer(&apiextensionsv1.JSONSchemaProps{
			Minimum: divided(s.Minimum, *s.MultipleOf), Maximum: divided(s.Maximum, *s.MultipleOf),
			ExclusiveMinimum: s.ExclusiveMinimum, ExclusiveMaximum: s.ExclusiveMaximum,
		}, path)
		if err != nil {
			return nil, err
		}
		return float64(v.(int64)) * *s.MultipleOf, nil
	}
	lo, hi := -1000.0, 1000.0
	if s.Minimum != nil {
		lo, hi = *s.Minimum, max(hi, *s.Minimum+1000)
	}
	if s.Maximum != nil {
		hi = *s.Maximum
		if s.Minimum == nil {
			lo = min(lo, hi-1000)
		}
	}
	if lo > hi || (lo == hi && (s.ExclusiveMinimum || s.ExclusiveMaximum)) {
		return nil, fmt.Errorf("%s: no number within [%v, %v]", where(path), lo, hi)
	}
	for range tries {
		v := lo + g.rnd.Float64()*(hi-lo)
		if (s.ExclusiveMinimum && v == lo) || (s.ExclusiveMaximum && v == hi) {
			continue
		}
		return v, nil
	}
	return (lo + hi) / 2, nil
}

func divided(v *float64, by float64) *float64 {
	if v == nil {
		return nil
	}
	d := *v / by
	return &d
}

func (g *Generator) str(s *apiextensionsv1.JSONSchemaProps, path string) (any, error) {
	switch s.Format {
	case "date-time":
		return g.instant().Format(time.RFC3339), nil
	case "date":
		return g.instant().Format(time.DateOnly), nil
	case "duration":
		return (time.Duration(g.rnd.IntN(3600)) * time.Second).String(), nil
	}
	// bounds checks the lengths; a string may be longer than a list, up
	// to maxString past its minimum.
	lo, _, err := bounds(path, "Length", s.MinLength, s.MaxLength)
	if err != nil {
		return nil, err
	}
	hi := lo + maxString
	if s.MaxLength != nil {
		hi = int(min(*s.MaxLength, int64(hi)))
	}
	if s.Pattern == "" {
		return g.word(lo, hi), nil
	}
	re, err := regexp.Compile(s.Pattern)
	if err != nil {
		return nil, fmt.Errorf("%s: pattern %q: %w", where(path), s.Pattern, err)
	}
	parsed, err := syntax.Parse(s.Pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%s: pattern %q: %w", where(path), s.Pattern, err)
	}
	parsed = parsed.Simplify()
	for range tries {
		var b strings.Builder
		g.match(&b, parsed)
		v := b.String()
		if n := len([]rune(v)); n >= lo && n <= hi && re.MatchString(v) {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%s: no string of %d to %d characters matching %q in %d tries", where(path), lo, hi, s.Pattern, tries)
}

// instant returns a moment between 2000 and 2030, in whole seconds, UTC.
func (g *Generator) instant() time.Time {
	return time.Unix(946684800+g.rnd.Int64N(30*365*24*3600), 0).UTC()
}

// word returns lowercase letters and digits, starting with a letter, of
// lo to hi characters.
func (g *Generator) word(lo, hi int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	const rest = letters + "0123456789"
	n := lo + g.rnd.IntN(hi-lo+1)
	b := make([]byte, n)
	for i := range b {
		if i == 0 {
			b[i] = letters[g.rnd.IntN(len(letters))]
		} else {
			b[i] = rest[g.rnd.IntN(len(rest))]
		}
	}
	return string(b)
}

// match writes a string re matches, or one that it may not, such as for
// a word boundary, which str checks and tries again.
func (g *Generator) match(b *strings.Builder, re *syntax.Regexp) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && g.rnd.IntN(2) == 0 {
				r = unicode.SimpleFold(r)
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(g.inClass(re.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteRune(rune('a' + g.rnd.IntN(26)))
	case syntax.OpCapture:
		g.match(b, re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			g.match(b, sub)
		}
	case syntax.OpAlternate:
		g.match(b, re.Sub[g.rnd.IntN(len(re.Sub))])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, maxRepeat
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + maxRepeat
			}
		}
		for range lo + g.rnd.IntN(hi-lo+1) {
			g.match(b, re.Sub[0])
		}
	}
	// The rest match the empty string: ^, $, \A, \z, (?:), word
	// boundaries, which str's check settles.
}

// inClass returns a rune of a character class, given as pairs of
// inclusive ranges, choosing a range first so a narrow one is as likely
// as a wide one.
func (g *Generator) inClass(ranges []rune) rune {
	if len(ranges) == 0 {
		return 'a'
	}
	i := 2 * g.rnd.IntN(len(ranges)/2)
	lo, hi := ranges[i], ranges[i+1]
	if hi > unicode.MaxASCII && lo <= unicode.MaxASCII {
		// A negated class spans most of Unicode: stay printable, where
		// the range holds any printable ASCII. One that starts at DEL,
		// as \pC's does, holds none, and stays as it is.
		if plo, phi := max(lo, ' '), rune(unicode.MaxASCII-1); plo <= phi {
			lo, hi = plo, phi
		}
	}
	return lo + rune(g.rnd.IntN(int(hi-lo)+1))
}

// Op is what a Step does to an object.
type Op int

// The Ops.
const (
	Create Op = iota
	Update
	Delete
)

// String names the Op as a failure's report prints it.
func (o Op) String() string {
	switch o {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Step is one change to the explored objects: a create or an update with
// a spec, or a delete.
type Step struct {
	Op   Op
	Name string
	// Spec is the object's whole spec, for a create or an update.
	Spec map[string]any
}

// String prints the Step as a failure's report does: the Op, the name,
// and the spec as JSON.
func (s Step) String() string {
	if s.Op == Delete {
		return fmt.Sprintf("delete %s", s.Name)
	}
	b, err := json.Marshal(s.Spec)
	if err != nil {
		return fmt.Sprintf("%s %s %v", s.Op, s.Name, s.Spec)
	}
	return fmt.Sprintf("%s %s %s", s.Op, s.Name, b)
}

// Steps returns n changes to objects named from names, each valid where
// it comes: a create of an object that isn't there (again, after a
// delete: a re-create), an update or a delete of one that is. An update
// is the likeliest, then a delete, then a create, with a create whenever
// no object is there. Each spec is one spec accepts, from Value, and an
// update's differs from the object's spec before it when the schema
// leaves room for another.
func (g *Generator) Steps(spec *apiextensionsv1.JSONSchemaProps, names []string, n int) ([]Step, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("no names to make steps for")
	}
	present := map[string]bool{}
	specs := map[string]map[string]any{}
	steps := make([]Step, 0, n)
	for range n {
		var here, gone []string
		for _, name := range names {
			if present[name] {
				here = append(here, name)
			} else {
				gone = append(gone, name)
			}
		}
		op := Create
		switch roll := g.rnd.IntN(10); {
		case len(here) == 0:
		case roll < 5:
			op = Update
		case roll < 8 || len(gone) == 0:
			op = Delete
		}
		step := Step{Op: op}
		switch op {
		case Create:
			step.Name = gone[g.rnd.IntN(len(gone))]
			present[step.Name] = true
		case Update:
			step.Name = here[g.rnd.IntN(len(here))]
		case Delete:
			step.Name = here[g.rnd.IntN(len(here))]
			delete(present, step.Name)
		}
		if op != Delete {
			for range tries {
				v, err := g.Value(spec)
				if err != nil {
					return nil, err
				}
				m, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("the spec's schema makes a %T, not an object", v)
				}
				step.Spec = m
				if op != Update || !reflect.DeepEqual(m, specs[step.Name]) {
					break
				}
			}
			specs[step.Name] = step.Spec
		}
		steps = append(steps, step)
	}
	return steps, nil
}
