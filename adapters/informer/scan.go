package informer

import (
	"encoding/json"
	"errors"
	"fmt"
)

// scanner reads a JSON document in place, without decoding it: it finds
// where values begin and end, and checks the grammar as it goes, so that
// what it accepts encoding/json accepts too. It never allocates. It is
// what lets the primary informer cut an object's managedFields out of the
// bytes the API server sent, in place of decoding the whole object into
// maps of interface values and encoding it again.
type scanner struct {
	data []byte
	pos  int
}

// maxDepth is how many objects and arrays may nest, one in another:
// encoding/json's limit, and sigs.k8s.io/json's, which client-go's
// serializers decode with (maxNestingDepth in both). A document 10,000
// levels deep is read; one 10,001 deep is refused.
const maxDepth = 10000

var errSyntax = errors.New("invalid JSON")

func (s *scanner) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errSyntax, what, s.pos)
}

func (s *scanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// atEnd reports whether nothing but white space is left. peek can't say:
// a NUL byte, which no JSON holds outside a string, also peeks as 0.
func (s *scanner) atEnd() bool {
	s.space()
	return s.pos >= len(s.data)
}

// member is one member of an object: its key's span, quotes included, and
// its value's span.
type member struct {
	keyStart, keyEnd     int
	valueStart, valueEnd int
	// escaped is whether the key holds an escape, so that its bytes are
	// not its text.
	escaped bool
}

// key reports whether m's key is name.
func (m member) key(data []byte, name string) bool {
	if !m.escaped {
		return string(data[m.keyStart+1:m.keyEnd-1]) == name
	}
	var k string
	return json.Unmarshal(data[m.keyStart:m.keyEnd], &k) == nil && k == name
}

// object reads the object that begins at the scanner's position, inside
// depth objects and arrays, calling each for every member, in order, once
// its value has been read. It stops at the first error, each's included.
func (s *scanner) object(depth int, each func(member) error) error {
	if s.peek() != '{' {
		return s.fail("expected an object")
	}
	s.pos++
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.fail("expected a string key")
		}
		var m member
		m.keyStart = s.pos
		escaped, err := s.str()
		if err != nil {
			return err
		}
		m.keyEnd, m.escaped = s.pos, escaped
		if s.peek() != ':' {
			return s.fail("expected a colon")
		}
		s.pos++
		s.space()
		m.valueStart = s.pos
		if err := s.value(depth + 1); err != nil {
			return err
		}
		m.valueEnd = s.pos
		if each != nil {
			if err := each(m); err != nil {
				return err
			}
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.fail("expected a comma or the end of the object")
		}
	}
}

// value reads any value that begins at the scanner's position, inside
// depth objects and arrays.
func (s *scanner) value(depth int) error {
	switch c := s.peek(); {
	case (c == '{' || c == '[') && depth >= maxDepth:
		// This object or array would be level depth+1.
		return s.fail("objects and arrays nested too deeply")
	case c == '{':
		return s.object(depth, nil)
	case c == '[':
		return s.array(depth, nil)
	case c == '"':
		_, err := s.str()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	default:
		return s.fail("expected a value")
	}
}

// array reads the array that begins at the scanner's position, inside
// depth objects and arrays, calling each with the span of every element,
// in order, once it has been read. It stops at the first error, each's
// included.
func (s *scanner) array(depth int, each func(start, end int) error) error {
	if s.peek() != '[' {
		return s.fail("expected an array")
	}
	s.pos++
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		s.space()
		start := s.pos
		if err := s.value(depth + 1); err != nil {
			return err
		}
		if each != nil {
			if err := each(start, s.pos); err != nil {
				return err
			}
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.fail("expected a comma or the end of the array")
		}
	}
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.fail("expected " + word)
	}
	s.pos += len(word)
	return nil
}

// str reads the string that begins at the scanner's position, and reports
// whether it holds an escape.
func (s *scanner) str() (escaped bool, err error) {
	s.pos++ // the opening quote
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return escaped, nil
		case c < 0x20:
			return false, s.fail("control character in a string")
		case c == '\\':
			escaped = true
			s.pos++
			if s.pos >= len(s.data) {
				return false, s.fail("unterminated escape")
			}
			switch s.data[s.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				s.pos++
				if len(s.data)-s.pos < 4 {
					return false, s.fail("short unicode escape")
				}
				for _, h := range s.data[s.pos : s.pos+4] {
					if !isHex(h) {
						return false, s.fail("bad unicode escape")
					}
				}
				s.pos += 4
			default:
				return false, s.fail("bad escape")
			}
		default:
			s.pos++
		}
	}
	return false, s.fail("unterminated string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads the number that begins at the scanner's position:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return s.fail("expected a digit")
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return s.fail("expected a digit after the decimal point")
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return s.fail("expected a digit in the exponent")
		}
	}
	return nil
}

func (s *scanner) digits() int {
	start := s.pos
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - start
}
