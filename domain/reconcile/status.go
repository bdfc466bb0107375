package reconcile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"sync"
	"unicode/utf8"
)

// StatusChanged reports whether applying next, a status's JSON, would
// change cached, the cached object's, nil when it has none. The two are
// compared as JSON values, not as bytes: the cache encodes the status with
// its keys sorted, the end user's type in its fields' order. Numbers compare
// by their text, so no two distinct integers are ever taken for the same;
// a member that is null is the same as one that is absent, and an empty
// status the same as none, as the API server stores them. Anything that
// isn't JSON is taken as a change, for the apply to report.
//
// Both are first put in a canonical form, without decoding them: compact,
// each object's members sorted by name and those that are null dropped.
// Two statuses are the same value exactly when their canonical forms are
// the same bytes, unless a string or a name holds an escape or bytes that
// aren't UTF-8, or an object names a member twice: then, rarely, both are
// decoded and compared as values.
func StatusChanged(cached, next []byte) bool {
	c := compareStatuses(cached, next)
	defer c.release()
	return c.changed
}

// comparison is what compareStatuses found: whether the status changed,
// and, when it did and both statuses are JSON, their canonical forms, for
// the pass to hash. release hands the forms' buffers back.
type comparison struct {
	changed bool
	// cached and next are the canonical forms, nil unless changed and
	// both are JSON. Equal forms are equal values, even where a form
	// doesn't tell its value exactly.
	cached, next *canonicalizer
}

// compareStatuses is StatusChanged, which keeps the canonical forms of a
// changed status for the caller to read until it calls release. The same
// bytes are never put in canonical form: most passes of a settled object
// end there, or at the canonical forms' bytes, with nothing decoded and
// nothing allocated.
func compareStatuses(cached, next []byte) comparison {
	if bytes.Equal(cached, next) {
		return comparison{}
	}
	a, b := canonicalizers.Get().(*canonicalizer), canonicalizers.Get().(*canonicalizer)
	exactA, exactB := a.canonicalize(cached), b.canonicalize(next)
	var changed bool
	if exactA && exactB {
		changed = !bytes.Equal(a.out, b.out)
	} else {
		changed = decodedChanged(cached, next)
	}
	if !changed || !a.valid || !b.valid {
		canonicalizers.Put(a)
		canonicalizers.Put(b)
		return comparison{changed: changed}
	}
	return comparison{changed: true, cached: a, next: b}
}

// release hands c's canonical forms back to the pool.
func (c comparison) release() {
	if c.cached != nil {
		canonicalizers.Put(c.cached)
		canonicalizers.Put(c.next)
	}
}

// decodedChanged is StatusChanged on the two decoded.
func decodedChanged(cached, next []byte) bool {
	a, err := canonical(cached)
	if err != nil {
		return true
	}
	b, err := canonical(next)
	if err != nil {
		return true
	}
	return !reflect.DeepEqual(a, b)
}

// canonical decodes doc into the value decodedChanged compares.
func canonical(doc []byte) (any, error) {
	if len(doc) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	v = dropNulls(v)
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil, nil
	}
	return v, nil
}

// dropNulls removes the members of v's objects whose value is null, at
// every depth. A list keeps its nulls, since they hold their places.
func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = dropNulls(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropNulls(e)
		}
	}
	return v
}

// canonicalizers keeps the buffers of the canonicalizers the workers use
// between passes.
var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

// canonicalizer writes the canonical form of a JSON document.
type canonicalizer struct {
	in  []byte
	out []byte
	// members holds the members of the objects being written, innermost
	// last; scratch holds an object's values while they are sorted.
	members []member
	scratch []byte
	// exact is false once the document holds something whose canonical
	// form may not tell its value: an escape or bytes that aren't UTF-8 in
	// a string, or a member named twice.
	exact bool
	// valid is whether the document is one JSON value, so that out is its
	// canonical form.
	valid bool
}

// member is an object's member: its name, in the document, and its
// value's canonical form, in out, unless the value is null.
type member struct {
	name       []byte
	start, end int
	null       bool
}

// canonicalize writes doc's canonical form to c.out and reports whether
// that form tells doc's value exactly. It reports false for anything that
// isn't one JSON value. An empty document, null, and an object with no
// member that isn't null all have the empty form.
func (c *canonicalizer) canonicalize(doc []byte) bool {
	c.in, c.out, c.members, c.scratch, c.exact, c.valid = doc, c.out[:0], c.members[:0], c.scratch[:0], true, true
	defer func() { c.in = nil }()
	if len(doc) == 0 {
		return true
	}
	if !json.Valid(doc) {
		c.valid = false
		return false
	}
	c.value(skipSpace(doc, 0))
	switch string(c.out) {
	case "null", "{}":
		c.out = c.out[:0]
	}
	return c.exact
}

// value writes the canonical form of the value at c.in[i:], valid JSON,
// and returns the index just past it.
func (c *canonicalizer) value(i int) int {
	switch c.in[i] {
	case '{':
		return c.object(i)
	case '[':
		c.out = append(c.out, '[')
		i = skipSpace(c.in, i+1)
		if c.in[i] == ']' {
			c.out = append(c.out, ']')
			return i + 1
		}
		for {
			i = skipSpace(c.in, c.value(i))
			if c.in[i] == ']' {
				c.out = append(c.out, ']')
				return i + 1
			}
			c.out = append(c.out, ',')
			i = skipSpace(c.in, i+1)
		}
	case '"':
		end := c.string(i)
		c.out = append(c.out, c.in[i:end]...)
		return end
	default: // a number, true, false or null: up to a delimiter
		end := i
		for end < len(c.in) && !isDelimiter(c.in[end]) {
			end++
		}
		c.out = append(c.out, c.in[i:end]...)
		return end
	}
}

// object writes the canonical form of the object at c.in[i:] and returns
// the index just past it.
func (c *canonicalizer) object(i int) int {
	start, base := len(c.out), len(c.members)
	i = skipSpace(c.in, i+1)
	for c.in[i] != '}' {
		end := c.string(i)
		name := c.in[i+1 : end-1]
		i = skipSpace(c.in, skipSpace(c.in, end)+1) // past the colon
		m := member{name: name, start: len(c.out)}
		if c.in[i] == 'n' { // null, as the input is valid JSON
			m.null = true
			i += len("null")
		} else {
			i = c.value(i)
		}
		m.end = len(c.out)
		c.members = append(c.members, m)
		i = skipSpace(c.in, i)
		if c.in[i] == ',' {
			i = skipSpace(c.in, i+1)
		}
	}
	ms := c.members[base:]
	byName := func(a, b member) int { return bytes.Compare(a.name, b.name) }
	if !slices.IsSortedFunc(ms, byName) {
		slices.SortStableFunc(ms, byName)
	}
	// The values were written in the document's order; write the members
	// again, in their names' order, with the values they were written as.
	c.scratch = append(c.scratch[:0], c.out[start:]...)
	c.out = append(c.out[:start], '{')
	first := true
	for k, m := range ms {
		if k > 0 && bytes.Equal(ms[k-1].name, m.name) {
			c.exact = false
		}
		if m.null {
			continue
		}
		if !first {
			c.out = append(c.out, ',')
		}
		first = false
		c.out = append(c.out, '"')
		c.out = append(c.out, m.name...)
		c.out = append(c.out, '"', ':')
		c.out = append(c.out, c.scratch[m.start-start:m.end-start]...)
	}
	c.out = append(c.out, '}')
	c.members = c.members[:base]
	return i + 1
}

// string returns the index just past the string at c.in[i:], noting
// whether it holds an escape or bytes that aren't UTF-8.
func (c *canonicalizer) string(i int) int {
	j, ascii := i+1, true
	for ; c.in[j] != '"'; j++ {
		switch b := c.in[j]; {
		case b == '\\':
			c.exact = false
			j++ // the escaped byte, which may be a quote
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(c.in[i+1:j]) {
		c.exact = false
	}
	return j + 1
}

func skipSpace(in []byte, i int) int {
	for i < len(in) && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' || in[i] == '\r') {
		i++
	}
	return i
}

func isDelimiter(b byte) bool {
	switch b {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
