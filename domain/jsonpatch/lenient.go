package jsonpatch

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Changed returns sent, the object an admission request carries, with the
// change that turned before into after applied to it, or nil when there
// is none. before and after are one Go type's encodings of the object as
// decoded from sent and as a mutating webhook left it.
//
// The change is Diff's patch between before and after, applied to sent
// leniently, since the type's encoding has members sent may lack, such as
// a struct or a field without omitempty: a replace of a member sent lacks
// adds it, an add under a member sent lacks adds the nearest missing
// member whole, as after has it, and a remove of one sent lacks does
// nothing. What the change leaves alone stays as sent spells it: members
// the type doesn't know, a number's text, a null. It fails when Diff
// does, or when sent is not JSON.
func Changed(sent, before, after []byte) ([]byte, error) {
	raw, err := Diff(before, after)
	if err != nil {
		return nil, err
	}
	var patch []struct {
		Op, Path string
	}
	if err := json.Unmarshal(raw, &patch); err != nil {
		return nil, err
	}
	if len(patch) == 0 {
		return nil, nil
	}
	doc, err := decodeJSON(sent)
	if err != nil {
		return nil, err
	}
	target, err := decodeJSON(after)
	if err != nil {
		return nil, err
	}
	for _, op := range patch {
		doc = applyLeniently(doc, target, op.Op, pointer(op.Path))
	}
	return json.Marshal(doc)
}

// decodeJSON decodes b keeping each number's text, so what is written
// back is what was sent.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// pointer returns the reference tokens of the JSON pointer p, which Diff
// wrote, so it is well formed.
func pointer(p string) []string {
	if p == "" {
		return nil
	}
	tokens := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens
}

// applyLeniently applies the operation op at path to doc, taking the
// value from target, the whole document as it is to be, and returns doc.
func applyLeniently(doc, target any, op string, path []string) any {
	if len(path) == 0 {
		if op == opRemove {
			return doc
		}
		return target
	}
	value, ok := at(target, path[:1])
	if op == opRemove {
		return removeLeniently(doc, value, path)
	}
	if !ok {
		return doc
	}
	switch d := doc.(type) {
	case map[string]any:
		child, has := d[path[0]]
		if !has || len(path) == 1 {
			// The nearest member sent lacks, or the one the patch sets,
			// is set whole, as target has it.
			d[path[0]] = value
			return d
		}
		d[path[0]] = applyLeniently(child, value, op, path[1:])
		return d
	case []any:
		i, err := strconv.Atoi(path[0])
		if err != nil || i < 0 || i >= len(d) {
			// Diff replaces arrays of other lengths whole, so an index
			// sent lacks is an array T decoded otherwise: T's stands.
			return target
		}
		if len(path) == 1 {
			d[i] = value
			return d
		}
		d[i] = applyLeniently(d[i], value, op, path[1:])
		return d
	}
	// sent has a scalar where T has a member: T's value stands.
	return target
}

// removeLeniently removes the member at path from doc, if doc has it,
// and returns doc; value is target's member at path[0].
func removeLeniently(doc, value any, path []string) any {
	if m, isMap := doc.(map[string]any); isMap {
		if len(path) == 1 {
			delete(m, path[0])
		} else if child, has := m[path[0]]; has {
			m[path[0]] = applyLeniently(child, value, opRemove, path[1:])
		}
	} else if a, isArray := doc.([]any); isArray {
		if i, err := strconv.Atoi(path[0]); err == nil && i >= 0 && i < len(a) && len(path) > 1 {
			a[i] = applyLeniently(a[i], value, opRemove, path[1:])
		}
	}
	return doc
}

// at returns the value at path in v, and whether there is one.
func at(v any, path []string) (any, bool) {
	for _, t := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[t]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
