package informer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A packed record is a compact object as a slab holds it, pointer-free:
//
//	length    uint32, the record's, these four bytes included
//	flags     one byte: flagDeleting
//	jsonLen   uint32
//	statusOff uint32, where the status starts in the JSON, plus one; 0 for none
//	statusLen uint32
//	the JSON
//	namespace, name, resourceVersion and uid, each a text
//	finalizers: uvarint count+1 (0 for nil), then each a text
//	annotations: uvarint count+1 (0 for nil), then each key and value, texts
//	controller: uvarint 0 for none, or 1 and the controller owner
//	  reference's apiVersion, kind, name and uid, texts
//
// A text is a uvarint x: an even x is a string of x/2 bytes that follow;
// an odd x is the (x-1)/2th byte from the JSON's start, in the JSON or a
// text before it, where the string's bytes are too, its length a uvarint
// after. Most of an object's metadata is in its JSON as it is, so a text
// costs a few bytes.
const (
	flagsAt     = recordHead
	jsonLenAt   = flagsAt + 1
	statusOffAt = jsonLenAt + 4
	statusLenAt = statusOffAt + 4
	jsonAt      = statusLenAt + 4

	flagDeleting = 1
)

// Where the texts of the metadata are, in order, after the JSON.
const (
	textNamespace = iota
	textName
	textResourceVersion
	textUID
	metaTexts
)

// packedFields is what a packed record holds.
type packedFields struct {
	json, status                  []byte
	namespace, name, version, uid string
	deleting                      bool
	finalizers                    []string
	annotations                   map[string]string
	// controller is the object's controller owner reference, nil for
	// none: an owned object's, whose store keeps it.
	controller *metav1.OwnerReference
}

// appendRecord appends f as a packed record, but for its first four
// bytes, its length, which the slab writes, to dst. f.status must be a
// slice of f.json, or nil (checkFields).
func appendRecord(dst []byte, f packedFields) []byte {
	dst, _ = appendRecordSearching(dst, f)
	return dst
}

// appendRecordSearching is appendRecord, and returns the bytes it
// searched for its texts, for the tests.
func appendRecordSearching(dst []byte, f packedFields) ([]byte, int) {
	start := len(dst) - recordHead
	var flags byte
	if f.deleting {
		flags |= flagDeleting
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.json)))
	var statusOff, statusLen uint32
	if f.status != nil {
		off, _ := offsetIn(f.json, f.status)
		statusOff, statusLen = uint32(off)+1, uint32(len(f.status))
	}
	dst = binary.LittleEndian.AppendUint32(dst, statusOff)
	dst = binary.LittleEndian.AppendUint32(dst, statusLen)
	dst = append(dst, f.json...)
	meta := &finder{start: start, budget: math.MaxInt}
	for _, s := range []string{f.namespace, f.name, f.version, f.uid} {
		dst = meta.appendText(dst, s, false)
	}
	// A list's texts are searched for each from where the one before
	// it was found, as the JSON lists them, within a budget of a few
	// times the JSON's length: an object of many annotations, each
	// searched for in the whole JSON, would cost the queue's goroutine
	// their count times the JSON's length on each of its events.
	budget := 2*len(f.json) + 4<<10
	dst = appendCount(dst, f.finalizers == nil, len(f.finalizers))
	list := &finder{start: start, budget: budget}
	for _, s := range f.finalizers {
		dst = list.appendText(dst, s, true)
	}
	dst = appendCount(dst, f.annotations == nil, len(f.annotations))
	lists := list.searched
	list = &finder{start: start, budget: budget}
	// Sorted, as the API server encodes a map, so that each key is
	// after the one before in the JSON, and each value just after its
	// key.
	for _, k := range slices.Sorted(maps.Keys(f.annotations)) {
		dst = list.appendText(dst, k, true)
		dst = list.appendValue(dst, f.annotations[k])
	}
	searched := func() int { return meta.searched + list.searched + lists }
	if f.controller == nil {
		return binary.AppendUvarint(dst, 0), searched()
	}
	dst = binary.AppendUvarint(dst, 1)
	ref := f.controller
	for _, s := range []string{ref.APIVersion, ref.Kind, ref.Name, string(ref.UID)} {
		dst = meta.appendText(dst, s, false)
	}
	return dst, searched()
}

// offsetIn returns where part, a slice of whole, starts in it, and false
// when it isn't a slice of whole.
func offsetIn(whole, part []byte) (int, bool) {
	w, p := uintptr(unsafe.Pointer(unsafe.SliceData(whole))), uintptr(unsafe.Pointer(unsafe.SliceData(part)))
	if p >= w && p-w+uintptr(len(part)) <= uintptr(len(whole)) {
		return int(p - w), true
	}
	return 0, false
}

// checkFields reports what of f a record can't hold: a status that isn't
// a slice of the JSON, or a JSON of 4 GiB or more.
func checkFields(f packedFields) error {
	if len(f.json) >= math.MaxUint32 {
		return fmt.Errorf("a JSON of %d bytes: a record holds less than 4 GiB", len(f.json))
	}
	if _, ok := offsetIn(f.json, f.status); f.status != nil && !ok {
		return errors.New("a status that is not a slice of the JSON")
	}
	return nil
}

// appendCount appends a count, 0 for nil and n+1 otherwise.
func appendCount(dst []byte, isNil bool, n int) []byte {
	if isNil {
		return binary.AppendUvarint(dst, 0)
	}
	return binary.AppendUvarint(dst, uint64(n)+1)
}

// finder finds the texts of the record that starts at start in dst in
// its JSON and the texts before them, searching no more bytes than its
// budget: past it, a text is written out.
type finder struct {
	start int
	// from is where, after the JSON's start, the search for the next
	// text of a list begins: just after the text before.
	from int
	// budget is the bytes left to search; searched the bytes searched.
	budget, searched int
}

// appendText appends s as a text: where it is in the JSON or a text
// before it, when it is there. A text of a list is searched for from
// where the one before was found, and moves that on.
func (fd *finder) appendText(dst []byte, s string, list bool) []byte {
	from := 0
	if list {
		from = fd.from
	}
	if i := fd.index(dst, from, len(dst), s); i >= 0 {
		if list {
			fd.from = i + len(s)
		}
		return appendPlace(dst, i, len(s))
	}
	return appendLiteral(dst, s)
}

// appendValue appends v, the value of the key appendText placed last, as
// a text: where it is just after that key, as `"key":"value"` has it, or
// else written out, so that a value the JSON escapes costs no search.
func (fd *finder) appendValue(dst []byte, v string) []byte {
	const gap = len(`":"`) + 2
	end := min(len(dst), fd.start+jsonAt+fd.from+gap+len(v))
	if i := fd.index(dst, fd.from, end, v); i >= 0 {
		fd.from = i + len(v)
		return appendPlace(dst, i, len(v))
	}
	return appendLiteral(dst, v)
}

// index returns where s is in dst[:end], from from after the JSON's
// start, relative to that start, or -1 when it isn't there, or s is
// empty, or the budget is spent.
func (fd *finder) index(dst []byte, from, end int, s string) int {
	region := dst[fd.start+jsonAt : end]
	if s == "" || fd.budget <= 0 || from > len(region) {
		return -1
	}
	// s is only read: no copy of it.
	i := bytes.Index(region[from:], unsafe.Slice(unsafe.StringData(s), len(s)))
	spent := len(region) - from
	if i >= 0 {
		spent = i + len(s)
	}
	fd.budget -= spent
	fd.searched += spent
	if i < 0 {
		return -1
	}
	return from + i
}

// appendPlace appends a text that is the n bytes at the JSON's at.
func appendPlace(dst []byte, at, n int) []byte {
	dst = binary.AppendUvarint(dst, uint64(at)*2+1)
	return binary.AppendUvarint(dst, uint64(n))
}

// appendLiteral appends a text written out.
func appendLiteral(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s))*2)
	return append(dst, s...)
}

// errRecord is what reading a damaged record fails with: a slab's records
// are written by appendRecord alone, so only the fuzz meets it.
var errRecord = errors.New("a damaged packed record")

// recordJSON returns rec's JSON, capped.
func recordJSON(rec []byte) []byte {
	n := int(binary.LittleEndian.Uint32(rec[jsonLenAt:]))
	return rec[jsonAt : jsonAt+n : jsonAt+n]
}

// recordStatus returns rec's status, a capped slice of its JSON, or nil.
func recordStatus(rec []byte) []byte {
	off := int(binary.LittleEndian.Uint32(rec[statusOffAt:]))
	if off == 0 {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(rec[statusLenAt:]))
	doc := recordJSON(rec)
	return doc[off-1 : off-1+n : off-1+n]
}

// recordDeleting reports whether rec's object is being deleted.
func recordDeleting(rec []byte) bool { return rec[flagsAt]&flagDeleting != 0 }

// textReader reads the texts after a record's JSON.
type textReader struct {
	rec []byte
	pos int
	err error
}

func newTextReader(rec []byte) *textReader {
	return &textReader{rec: rec, pos: jsonAt + len(recordJSON(rec))}
}

// uvarint reads a uvarint, or fails.
func (t *textReader) uvarint() uint64 {
	if t.err != nil {
		return 0
	}
	v, n := binary.Uvarint(t.rec[t.pos:])
	if n <= 0 {
		t.err = errRecord
		return 0
	}
	t.pos += n
	return v
}

// text returns the next text's bytes, a slice of the record.
func (t *textReader) text() []byte {
	x := t.uvarint()
	if t.err != nil {
		return nil
	}
	if x%2 == 1 {
		// What is before the text: the JSON and the texts before it.
		before := uint64(t.pos - jsonAt)
		off, n := (x-1)/2, t.uvarint()
		if t.err != nil || off > before || n > before-off {
			t.err = errRecord
			return nil
		}
		at := jsonAt + int(off)
		return t.rec[at : at+int(n) : at+int(n)]
	}
	n := x / 2
	if n > uint64(len(t.rec)-t.pos) {
		t.err = errRecord
		return nil
	}
	out := t.rec[t.pos : t.pos+int(n) : t.pos+int(n)]
	t.pos += int(n)
	return out
}

// skip skips n texts.
func (t *textReader) skip(n int) {
	for range n {
		t.text()
	}
}

// recordText returns the i-th of the metadata's texts, a slice of rec.
func recordText(rec []byte, i int) []byte {
	t := newTextReader(rec)
	t.skip(i)
	return t.text()
}

// count reads a count: -1 for nil.
func (t *textReader) count() int {
	c := t.uvarint()
	if t.err != nil || c > uint64(len(t.rec)) {
		t.err = errRecord
		return -1
	}
	return int(c) - 1
}

// recordLists returns rec's finalizers and annotations, copied: nothing
// they are handed to keeps the record's chunk alive.
func recordLists(rec []byte) ([]string, map[string]string, error) {
	f, a, _, err := readTail(rec)
	return f, a, err
}

// recordController returns rec's controller owner reference, copied, and
// false when it keeps none.
func recordController(rec []byte) (metav1.OwnerReference, bool) {
	_, _, ref, err := readTail(rec)
	if err != nil || ref == nil {
		return metav1.OwnerReference{}, false
	}
	return *ref, true
}

// readTail reads what rec keeps after its metadata's texts, copied: its
// finalizers, annotations and controller owner reference.
func readTail(rec []byte) ([]string, map[string]string, *metav1.OwnerReference, error) {
	t := newTextReader(rec)
	t.skip(metaTexts)
	var finalizers []string
	if n := t.count(); n >= 0 {
		finalizers = make([]string, 0, n)
		for range n {
			finalizers = append(finalizers, string(t.text()))
		}
	}
	var annotations map[string]string
	if n := t.count(); n >= 0 {
		annotations = make(map[string]string, n)
		for range n {
			k := string(t.text())
			annotations[k] = string(t.text())
		}
	}
	var controller *metav1.OwnerReference
	if t.uvarint() == 1 {
		yes := true
		controller = &metav1.OwnerReference{
			APIVersion: string(t.text()), Kind: string(t.text()), Name: string(t.text()),
			UID: types.UID(t.text()), Controller: &yes,
		}
	}
	if t.err != nil {
		return nil, nil, nil, t.err
	}
	if t.pos != len(rec) {
		return nil, nil, nil, fmt.Errorf("%w: %d bytes after its texts", errRecord, len(rec)-t.pos)
	}
	return finalizers, annotations, controller, nil
}
