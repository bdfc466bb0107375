package informer

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/types"
)

// wireObject is an object read from the bytes the API server sent, before
// its compact form is made: the metadata the cache keeps, where the parts
// of the JSON the cache leaves out and points into are, and its kind and
// apiVersion as client-go's serializers read them.
type wireObject struct {
	data []byte
	c    *cached
	// open is the offset of the object's opening brace, and end that of
	// the end of its JSON, white space after it left out.
	open, end int
	// cut is the span of managedFields to leave out, with one comma
	// beside it; start equals end when there is none.
	cut struct{ start, end int }
	// status is the status member, when hasStatus.
	status    member
	hasStatus bool
	// members counts the object's members.
	members int
	types   typeMembers
}

// typeMembers is what an object's top-level members say of its type.
type typeMembers struct {
	// kind and apiVersion are the texts of the last members of those
	// names, as the maps of the dynamic client read them: nil when there
	// is none, or when it isn't a string.
	kind, apiVersion []byte
	// named counts the members named kind or apiVersion, whatever their
	// values.
	named int
	// odd is whether client-go's serializer, which reads an object's kind
	// and apiVersion first with encoding/json, ignoring case, may read
	// them otherwise: a member named so holds something other than a
	// string or null, or another member's name matches one of them but
	// for case.
	odd bool
}

// readObject reads the object data encodes, scanning it all. It fails on
// JSON encoding/json would refuse, and on a document that isn't an
// object. A field of a type the API server never sends, such as a number
// for a name, reads as absent, as the dynamic client's accessors read it.
func readObject(data []byte) (wireObject, error) {
	s := scanner{data: data}
	o := wireObject{data: data, c: &cached{}}
	var metadata member
	var hasMetadata bool
	s.space()
	o.open = s.pos
	err := s.object(0, func(m member) error {
		v := data[m.valueStart:m.valueEnd]
		o.members++
		switch {
		case m.key(data, "metadata"):
			metadata, hasMetadata = m, true
		case m.key(data, "status"):
			o.status, o.hasStatus = m, true
		case m.key(data, "kind"):
			o.types.kind = o.types.read(v)
		case m.key(data, "apiVersion"):
			o.types.apiVersion = o.types.read(v)
		case foldsToTypeName(data, m):
			o.types.odd = true
		}
		return nil
	})
	if err != nil {
		return wireObject{}, err
	}
	if !s.atEnd() {
		return wireObject{}, s.fail("data after the object")
	}
	o.end = len(bytes.TrimRight(data, " \t\r\n"))
	o.cut.start, o.cut.end = o.end, o.end
	if !hasMetadata || data[metadata.valueStart] != '{' {
		return o, nil
	}
	ms := scanner{data: data, pos: metadata.valueStart}
	var prev, managed member
	var hasManaged, managedFirst, cut bool
	err = ms.object(1, func(m member) error {
		if hasManaged && managedFirst && !cut {
			// managedFields was the first member: it goes up to this
			// one's key, with the comma between.
			o.cut.start, o.cut.end, cut = managed.keyStart, m.keyStart, true
		}
		if m.key(data, "managedFields") {
			managed, hasManaged = m, true
			managedFirst = prev == (member{})
			if !managedFirst {
				o.cut.start, o.cut.end, cut = prev.valueEnd, m.valueEnd, true
			}
		} else {
			readMetadata(data, m, o.c)
		}
		prev = m
		return nil
	})
	if err != nil {
		return wireObject{}, err
	}
	if hasManaged && managedFirst && !cut {
		o.cut.start, o.cut.end = managed.keyStart, managed.valueEnd
	}
	return o, nil
}

// read returns the text of v, the value of a member named kind or
// apiVersion, and notes the member.
func (t *typeMembers) read(v []byte) []byte {
	t.named++
	if v[0] != '"' {
		t.odd = t.odd || string(v) != "null"
		return nil
	}
	if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return v[1 : len(v)-1]
	}
	return []byte(text(v))
}

// foldsToTypeName reports whether m's name is kind or apiVersion but for
// case, as encoding/json matches names (bytes.EqualFold), and not exactly
// that.
func foldsToTypeName(data []byte, m member) bool {
	k := data[m.keyStart+1 : m.keyEnd-1]
	if m.escaped || !utf8.Valid(k) {
		var name string
		if json.Unmarshal(data[m.keyStart:m.keyEnd], &name) != nil {
			return true
		}
		k = []byte(name)
	}
	return (bytes.EqualFold(k, []byte("kind")) && string(k) != "kind") ||
		(bytes.EqualFold(k, []byte("apiVersion")) && string(k) != "apiVersion")
}

// compact returns the object as the cache holds it: its JSON as sent, but
// for metadata.managedFields and the white space after it, with prefix,
// members and their commas, inserted after its opening brace. It makes
// one allocation, the JSON's.
func (o wireObject) compact(prefix []byte) *cached {
	data, cut := o.data, o.cut
	doc := make([]byte, 0, o.end-(cut.end-cut.start)+len(prefix))
	doc = append(doc, data[:o.open+1]...)
	doc = append(doc, prefix...)
	doc = append(doc, data[o.open+1:cut.start]...)
	doc = append(doc, data[cut.end:o.end]...)
	c := o.c
	c.json = doc[:len(doc):len(doc)]
	if o.hasStatus && string(data[o.status.valueStart:o.status.valueEnd]) != "null" {
		start, stop := o.status.valueStart+len(prefix), o.status.valueEnd+len(prefix)
		if o.status.valueStart >= cut.end {
			start, stop = start-(cut.end-cut.start), stop-(cut.end-cut.start)
		}
		// Capped, so that appending to the status can't write into the
		// JSON.
		c.status = doc[start:stop:stop]
	}
	return c
}

// decodeCompact returns the object data encodes as the cache holds it: the
// JSON as sent, but for metadata.managedFields, and the metadata the
// informer and the domain read. It decodes only those fields, and fails
// as readObject does.
func decodeCompact(data []byte) (*cached, error) {
	o, err := readObject(data)
	if err != nil {
		return nil, err
	}
	return o.compact(nil), nil
}

// readMetadata sets the field of c's ObjectMeta that m, a member of the
// object's metadata, holds, if the cache keeps it.
func readMetadata(data []byte, m member, c *cached) {
	v := data[m.valueStart:m.valueEnd]
	switch {
	case m.key(data, "name"):
		c.name = text(v)
	case m.key(data, "namespace"):
		c.namespace = text(v)
	case m.key(data, "uid"):
		c.uid = types.UID(text(v))
	case m.key(data, "resourceVersion"):
		c.resourceVersion = text(v)
	case m.key(data, "finalizers"):
		c.finalizers = nil
		if json.Unmarshal(v, &c.finalizers) != nil {
			c.finalizers = nil
		}
	case m.key(data, "annotations"):
		c.annotations = nil
		if json.Unmarshal(v, &c.annotations) != nil {
			c.annotations = nil
		}
	case m.key(data, "deletionTimestamp"):
		// Any deletionTimestamp means the object is being deleted, even
		// one that doesn't parse as a time.
		c.deleting = string(v) != "null"
	}
}

// text returns the string the JSON value v holds, or "" when v is not a
// string. A string with an escape or a byte that isn't UTF-8 is decoded
// by encoding/json, which replaces such bytes as the dynamic client's
// decoding does.
func text(v []byte) string {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1])
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}
