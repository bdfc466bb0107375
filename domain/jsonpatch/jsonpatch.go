// Package jsonpatch computes and applies the RFC 6902 JSON Patch a mutating
// admission webhook answers with: the operations that turn the object the
// API server sent into the object the end user's defaulting made of it
// (issue #21). It is pure: bytes in, bytes out, the standard library only.
//
// Only the add, remove and replace operations are produced or applied;
// move, copy and test are never needed to express a difference, so they
// are left out rather than half supported.
package jsonpatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The three operations this package produces and applies.
const (
	opAdd     = "add"
	opRemove  = "remove"
	opReplace = "replace"
)

// operation is one element of a JSON Patch. Value is kept raw so that a
// null value is written as null, and a remove carries none at all.
type operation struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// Diff returns the RFC 6902 JSON Patch, a JSON array of add, remove and
// replace operations, that turns the JSON document before into after.
// Both must be JSON objects, as AdmissionReview objects are; it fails,
// naming before or after and why, when either is not valid JSON or not an
// object.
//
// Object members are compared recursively: a member only after has is
// added, one only before has is removed, and one whose value changed in
// type or as a scalar is replaced. Arrays of equal length are compared
// element by element; arrays of different lengths are replaced whole,
// which is simple and always correct where a minimal edit script of
// insertions and removals would be neither cheap nor needed.
//
// Numbers are compared by their JSON text, as json.Decoder.UseNumber keeps
// it, so 1 and 1.0 differ and give a replace: the patch then writes the
// exact text after has. Operations come in a deterministic order, each
// object's members sorted by name, so the same input always gives the same
// patch; no difference at all gives [].
func Diff(before, after []byte) ([]byte, error) {
	a, errA := decodeObject("before", before)
	b, errB := decodeObject("after", after)
	if err := errors.Join(errA, errB); err != nil {
		return nil, err
	}
	ops := []operation{}
	if err := diff("", a, b, &ops); err != nil {
		return nil, err
	}
	out, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the patch: %w", err)
	}
	return out, nil
}

// diff appends to ops the operations that turn a, found at the JSON
// Pointer path, into b.
func diff(path string, a, b any, ops *[]operation) error {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return replace(path, b, ops)
		}
		return diffObjects(path, av, bv, ops)
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return replace(path, b, ops)
		}
		for i := range av {
			if err := diff(path+"/"+strconv.Itoa(i), av[i], bv[i], ops); err != nil {
				return err
			}
		}
		return nil
	default:
		if sameScalar(a, b) {
			return nil
		}
		return replace(path, b, ops)
	}
}

// diffObjects appends the operations for the members of two objects, in
// the order of their sorted names.
func diffObjects(path string, a, b map[string]any, ops *[]operation) error {
	names := make([]string, 0, len(a)+len(b))
	for name := range a {
		names = append(names, name)
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		p := path + "/" + escape(name)
		av, inA := a[name]
		bv, inB := b[name]
		switch {
		case !inB:
			*ops = append(*ops, operation{Op: opRemove, Path: p})
		case !inA:
			if err := appendWithValue(opAdd, p, bv, ops); err != nil {
				return err
			}
		default:
			if err := diff(p, av, bv, ops); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameScalar reports whether two decoded scalars (string, json.Number,
// bool or nil) are the same JSON value; numbers compare by their text.
func sameScalar(a, b any) bool {
	switch av := a.(type) {
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case json.Number:
		bv, ok := b.(json.Number)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case nil:
		return b == nil
	default:
		return false
	}
}

func replace(path string, value any, ops *[]operation) error {
	return appendWithValue(opReplace, path, value, ops)
}

func appendWithValue(op, path string, value any, ops *[]operation) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding the value at %q: %w", path, err)
	}
	*ops = append(*ops, operation{Op: op, Path: path, Value: raw})
	return nil
}

// escape makes a member name one reference token of a JSON Pointer, as
// RFC 6901 says: ~ becomes ~0 first, so that the ~ of a / made ~1 is not
// escaped again.
func escape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// unescape is escape's inverse; it fails on a ~ not followed by 0 or 1.
func unescape(token string) (string, error) {
	for i := 0; i < len(token); i++ {
		if token[i] == '~' && (i+1 == len(token) || (token[i+1] != '0' && token[i+1] != '1')) {
			return "", fmt.Errorf("reference token %q: ~ must be followed by 0 or 1", token)
		}
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~"), nil
}

// decode reads exactly one JSON value from data, keeping numbers as their
// text; name says which document it is in the error.
func decode(name string, data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s is not valid JSON: data after its first value", name)
	}
	return v, nil
}

// decodeObject decodes data as decode does and fails unless it is a JSON
// object.
func decodeObject(name string, data []byte) (map[string]any, error) {
	v, err := decode(name, data)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON object but %s", name, kind(v))
	}
	return obj, nil
}

// kind names a decoded value's JSON type, for errors.
func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Apply returns doc with patch applied: a minimal RFC 6902 applier of the
// add, remove and replace operations Diff produces, for the tests of this
// package and of the webhook that answers with its patches. The result is
// re-encoded, object members sorted by name, numbers in their original
// text.
//
// It fails when doc or patch is not valid JSON, naming which; every
// malformed operation (an unknown op, a path that is not a JSON Pointer,
// a missing value) is reported at once, each with its index and path,
// before any is applied. Operations then apply in order, and the first one
// whose path does not resolve stops the patch, its index and path named.
func Apply(doc, patch []byte) ([]byte, error) {
	root, errDoc := decode("doc", doc)
	ops, errPatch := decodePatch(patch)
	if err := errors.Join(errDoc, errPatch); err != nil {
		return nil, err
	}
	for i, o := range ops {
		var err error
		root, err = applyOne(root, o)
		if err != nil {
			return nil, fmt.Errorf("operation %d (%s %q): %w", i, o.op, o.path, err)
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encoding the patched document: %w", err)
	}
	return out, nil
}

// parsedOp is an operation checked and decoded for applying.
type parsedOp struct {
	op     string
	path   string
	tokens []string
	value  any
}

// decodePatch decodes and checks every operation of patch, joining every
// mistake.
func decodePatch(patch []byte) ([]parsedOp, error) {
	var raw []operation
	dec := json.NewDecoder(bytes.NewReader(patch))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("patch is not a valid JSON Patch array: %w", err)
	}
	var (
		ops  = make([]parsedOp, 0, len(raw))
		errs []error
	)
	for i, r := range raw {
		p, err := parseOp(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("operation %d (%s %q): %w", i, r.Op, r.Path, err))
			continue
		}
		ops = append(ops, p)
	}
	return ops, errors.Join(errs...)
}

func parseOp(r operation) (parsedOp, error) {
	p := parsedOp{op: r.Op, path: r.Path}
	var errs []error
	switch r.Op {
	case opAdd, opReplace:
		if r.Value == nil {
			errs = append(errs, errors.New("value is missing"))
		} else {
			v, err := decode("value", r.Value)
			if err != nil {
				errs = append(errs, err)
			}
			p.value = v
		}
	case opRemove:
	default:
		errs = append(errs, fmt.Errorf("op %q is not add, remove or replace", r.Op))
	}
	toks, err := parsePointer(r.Path)
	if err != nil {
		errs = append(errs, err)
	}
	p.tokens = toks
	return p, errors.Join(errs...)
}

// parsePointer splits a JSON Pointer into its unescaped reference tokens;
// "" is the whole document.
func parsePointer(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	if !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("path %q is not a JSON Pointer: it must be empty or start with /", path)
	}
	parts := strings.Split(path[1:], "/")
	var errs []error
	for i, part := range parts {
		tok, err := unescape(part)
		if err != nil {
			errs = append(errs, fmt.Errorf("path %q: %w", path, err))
		}
		parts[i] = tok
	}
	return parts, errors.Join(errs...)
}

// applyOne applies one operation to the document root and returns the new
// root.
func applyOne(root any, o parsedOp) (any, error) {
	if len(o.tokens) == 0 {
		switch o.op {
		case opAdd, opReplace:
			return o.value, nil
		default:
			return nil, errors.New("the whole document cannot be removed")
		}
	}
	return applyAt(root, o.tokens, o)
}

// applyAt applies o at tokens below node and returns node as changed; an
// array may come back as a new slice.
func applyAt(node any, tokens []string, o parsedOp) (any, error) {
	tok, last := tokens[0], len(tokens) == 1
	switch n := node.(type) {
	case map[string]any:
		child, ok := n[tok]
		if !last {
			if !ok {
				return nil, fmt.Errorf("member %q does not exist", tok)
			}
			changed, err := applyAt(child, tokens[1:], o)
			if err != nil {
				return nil, err
			}
			n[tok] = changed
			return n, nil
		}
		switch o.op {
		case opAdd:
			n[tok] = o.value
		case opReplace:
			if !ok {
				return nil, fmt.Errorf("member %q to replace does not exist", tok)
			}
			n[tok] = o.value
		case opRemove:
			if !ok {
				return nil, fmt.Errorf("member %q to remove does not exist", tok)
			}
			delete(n, tok)
		}
		return n, nil
	case []any:
		if last && o.op == opAdd && tok == "-" {
			return append(n, o.value), nil
		}
		limit := len(n)
		if last && o.op == opAdd {
			limit++ // an add may insert at the end
		}
		i, err := index(tok, limit)
		if err != nil {
			return nil, err
		}
		if !last {
			changed, err := applyAt(n[i], tokens[1:], o)
			if err != nil {
				return nil, err
			}
			n[i] = changed
			return n, nil
		}
		switch o.op {
		case opAdd:
			return slices.Insert(n, i, o.value), nil
		case opReplace:
			n[i] = o.value
			return n, nil
		default:
			return slices.Delete(n, i, i+1), nil
		}
	default:
		return nil, fmt.Errorf("reference token %q: the value there is %s, not an object or array", tok, kind(node))
	}
}

// index parses an array index token, RFC 6901's digits without leading
// zeros, and fails unless it is below limit.
func index(tok string, limit int) (int, error) {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') || strings.TrimLeft(tok, "0123456789") != "" {
		return 0, fmt.Errorf("array index %q is not a non-negative integer without leading zeros", tok)
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i >= limit {
		return 0, fmt.Errorf("array index %q is out of range: it must be below %d", tok, limit)
	}
	return i, nil
}
