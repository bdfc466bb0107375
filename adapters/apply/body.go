package apply

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// A Writer's bodies are written by hand rather than by encoding/json: an
// apply of a status or of the finalizer is always the same object, an
// envelope of apiVersion, kind and a few fields of metadata around the
// status, so there is nothing for encoding/json's reflection to find out
// but the cost of finding it. The status, JSON already, is checked and
// compacted in one pass, where json.Valid and then json.Marshal of it as
// a json.RawMessage each passed over it whole. The bytes are those
// json.Marshal wrote of the struct below, byte for byte, which
// TestAppendBody and FuzzAppendBody hold the hand encoder to.
//
//	type body struct {
//		APIVersion string `json:"apiVersion"`
//		Kind       string `json:"kind"`
//		Metadata   struct {
//			Name       string    `json:"name"`
//			Namespace  string    `json:"namespace,omitempty"`
//			UID        types.UID `json:"uid"`
//			Finalizers []string  `json:"finalizers,omitempty"`
//		} `json:"metadata"`
//		Status json.RawMessage `json:"status,omitempty"`
//	}

// envelope returns the start of every body a Writer of group, version
// and kind sends, up to the object's name, in one allocation: written
// once, when the Writer is made, which for Resource.Apply is each apply.
func envelope(group, version, kind string) []byte {
	b := make([]byte, 0, len(`{"apiVersion":"/","kind":"","metadata":{"name":`)+len(group)+len(version)+len(kind))
	b = append(b, `{"apiVersion":`...)
	// The apiVersion as schema.GroupVersion writes it: the version alone
	// for the core group.
	switch {
	case group == "":
		b = appendString(b, version)
	case plain(group) && plain(version):
		b = append(b, '"')
		b = append(b, group...)
		b = append(b, '/')
		b = append(b, version...)
		b = append(b, '"')
	default:
		b = appendString(b, group+"/"+version)
	}
	b = append(b, `,"kind":`...)
	b = appendString(b, kind)
	return append(b, `,"metadata":{"name":`...)
}

// appendBody appends to dst, after head, the envelope of the Writer's
// bodies, the rest of the body of an apply to the object key and uid:
// its finalizers when there is one (finalizers is then true), and status
// unless it is empty, compacted, with <, >, &, U+2028 and U+2029 escaped
// in its strings as encoding/json escapes them. It fails, with dst as it
// was, where json.Marshal failed: when status isn't JSON, or nests too
// deep.
func appendBody(dst, head []byte, key ports.Key, uid types.UID, finalizer string, finalizers bool, status []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, head...)
	dst = appendString(dst, key.Name)
	if key.Namespace != "" {
		dst = append(dst, `,"namespace":`...)
		dst = appendString(dst, key.Namespace)
	}
	dst = append(dst, `,"uid":`...)
	dst = appendString(dst, string(uid))
	if finalizers {
		dst = append(dst, `,"finalizers":[`...)
		dst = appendString(dst, finalizer)
		dst = append(dst, ']')
	}
	dst = append(dst, '}')
	if len(status) > 0 {
		dst = append(dst, `,"status":`...)
		var err error
		if dst, err = appendRaw(dst, status); err != nil {
			return dst[:start], err
		}
	}
	return append(dst, '}'), nil
}

// appendString appends s to dst as encoding/json writes a string, its
// HTML characters escaped. A name, a uid, a kind or a finalizer is
// printable ASCII with nothing to escape, which is appended as it is;
// anything else is left to encoding/json itself.
func appendString(dst []byte, s string) []byte {
	if !plain(s) {
		b, _ := json.Marshal(s) // a string always encodes
		return append(dst, b...)
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// plain reports whether encoding/json writes s between quotes as it is:
// printable ASCII without a quote, a backslash or an HTML character.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendRaw appends raw, a JSON value, to dst as json.Marshal writes a
// json.RawMessage: compacted, with <, >, &, U+2028 and U+2029 escaped. It
// fails when raw isn't JSON, or nests too deep for json.Marshal to write
// it as a body's status.
func appendRaw(dst, raw []byte) ([]byte, error) {
	start := len(dst)
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return dst, err
	}
	dst = buf.Bytes()
	// Nested 10000 deep, a value passes json.Compact alone but may not
	// inside the body, one level deeper: Go 1.27's default encoding/json,
	// on json/v2, refuses it there, and GOEXPERIMENT=nojsonv2's writes
	// it. Only a status of 20000 bytes or more nests so deep, and then
	// json.Marshal of it one level down, as in the body, decides.
	if len(dst)-start >= 2*maxNesting && nesting(dst[start:]) >= maxNesting {
		if _, err := json.Marshal(struct{ Status json.RawMessage }{raw}); err != nil {
			return dst[:start], err
		}
	}
	if !needsHTMLEscape(dst[start:]) {
		return dst, nil
	}
	// Rare: a status with an HTML character or a line separator in a
	// string. HTMLEscape on compact JSON is what json.Marshal writes.
	compacted := bytes.Clone(dst[start:])
	buf = bytes.NewBuffer(dst[:start])
	json.HTMLEscape(buf, compacted)
	return buf.Bytes(), nil
}

// needsHTMLEscape reports whether b holds a byte json.HTMLEscape escapes:
// <, > or &, or the start of U+2028 or U+2029.
func needsHTMLEscape(b []byte) bool {
	for i, c := range b {
		switch {
		case c == '<' || c == '>' || c == '&':
			return true
		case c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8:
			return true
		}
	}
	return false
}

// maxNesting is how deep encoding/json nests a value it writes or checks.
const maxNesting = 10000

// nesting returns how deep b, compact JSON, nests its arrays and
// objects, counting no bracket inside a string.
func nesting(b []byte) int {
	depth, most := 0, 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return most
			}
			i = end - 1
		case '[', '{':
			depth++
			most = max(most, depth)
		case ']', '}':
			depth--
		}
	}
	return most
}
