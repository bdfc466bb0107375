package generate

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

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
