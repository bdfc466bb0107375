package explore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// outcome is what the operator made of one explored object, as the
// differential oracles compare it: the object's status, and the objects
// it controls, by their controller ownerReference, directly or through
// one it controls, each kind's sorted by normalised name. Everything is
// normalised: what differs between two objects of the same spec only
// because they are two (names, uids, timestamps, generations) is left
// out, and so is what Config.Volatile names.
type outcome struct {
	status map[string]any
	owned  map[string][]owned
}

// owned is one object an explored object controls: its name as the
// cluster has it, for the report, and its normalised name and content.
type owned struct {
	name, key string
	obj       map[string]any
}

// The placeholders the explored object's name and its namespace are
// replaced with, in every key and string of an outcome.
const (
	nameHolder      = "$(NAME)"
	namespaceHolder = "$(NAMESPACE)"
)

// outcomeOf returns parent's outcome, its descendants found among
// written, what the operator has written, by their controller
// ownerReferences. The descendants are those the operator wrote: the
// ReplicaSets a Deployment controller makes of its Deployment are that
// controller's doing, not the operator's.
func outcomeOf(parent *unstructured.Unstructured, written map[string]*unstructured.Unstructured, vs []volatile) outcome {
	name, ns := parent.GetName(), parent.GetNamespace()
	controls := map[types.UID][]*unstructured.Unstructured{}
	for _, u := range written {
		for _, ref := range u.GetOwnerReferences() {
			if ref.Controller != nil && *ref.Controller {
				controls[ref.UID] = append(controls[ref.UID], u)
			}
		}
	}
	out := outcome{owned: map[string][]owned{}}
	status, _ := parent.Object["status"].(map[string]any)
	// The explored kind's volatile paths start at status.
	wrapped := map[string]any{"status": substitute(normaliseStatus(runtime.DeepCopyJSONValue(status)), name, ns)}
	drop(wrapped, parent.GetKind(), vs)
	out.status, _ = wrapped["status"].(map[string]any)
	if out.status == nil {
		out.status = map[string]any{}
	}
	seen := map[types.UID]bool{parent.GetUID(): true}
	for next := []types.UID{parent.GetUID()}; len(next) > 0; {
		uid := next[0]
		next = next[1:]
		for _, u := range controls[uid] {
			if seen[u.GetUID()] {
				continue
			}
			seen[u.GetUID()] = true
			next = append(next, u.GetUID())
			obj := substitute(normaliseOwned(u), name, ns).(map[string]any)
			drop(obj, u.GetKind(), vs)
			key, _, _ := unstructured.NestedString(obj, "metadata", "name")
			out.owned[u.GetKind()] = append(out.owned[u.GetKind()], owned{name: u.GetName(), key: key, obj: obj})
		}
	}
	// By name, and then by content, for objects whose names Volatile
	// leaves out.
	for _, list := range out.owned {
		slices.SortFunc(list, func(a, b owned) int {
			return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(value(a.obj), value(b.obj)))
		})
	}
	return out
}

// revisionAnnotation is the Deployment controller's number of a
// Deployment's rollout.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// normaliseOwned returns a copy of u without what two objects of the
// same spec differ by only because they are two, or because of when
// they were written: its uid, resourceVersion, creationTimestamp,
// managedFields, generation and namespace, its owners' uids, its
// name's generated suffix, and a Deployment's revision annotation. Its status goes too: an owned object's
// status is written by its own controller (a Deployment's by the
// Deployment controller), in its own time, not by the operator.
func normaliseOwned(u *unstructured.Unstructured) map[string]any {
	obj := runtime.DeepCopyJSON(u.Object)
	delete(obj, "status")
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		return obj
	}
	if g, _ := meta["generateName"].(string); g != "" {
		meta["name"] = g
	}
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		delete(meta, k)
	}
	// The Deployment controller numbers a Deployment's rollouts in an
	// annotation of its own: a count of the road taken, not the
	// operator's doing.
	if annotations, _ := meta["annotations"].(map[string]any); annotations != nil {
		delete(annotations, revisionAnnotation)
		if len(annotations) == 0 {
			delete(meta, "annotations")
		}
	}
	refs, _ := meta["ownerReferences"].([]any)
	for _, r := range refs {
		if r, ok := r.(map[string]any); ok {
			delete(r, "uid")
		}
	}
	return obj
}

// normaliseStatus returns status without its observed generations, at
// any depth, and without the times of its conditions (lastTransitionTime
// and the like): an object updated twice observes generation 2 where a
// fresh one observes 1, and its conditions changed at other times.
func normaliseStatus(status any) map[string]any {
	m, _ := status.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	var walk func(v any, inConditions bool)
	walk = func(v any, inConditions bool) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				switch {
				case k == "observedGeneration":
					delete(t, k)
				case inConditions && (strings.HasSuffix(k, "Time") || strings.HasSuffix(k, "Timestamp")):
					delete(t, k)
				default:
					walk(e, k == "conditions")
				}
			}
		case []any:
			for _, e := range t {
				walk(e, inConditions)
			}
		}
	}
	walk(m, false)
	return m
}

// substitute returns v with ns, then name, replaced by their
// placeholders in every key and string, where each is a word of its own
// (replaceWord).
func substitute(v any, name, ns string) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[substitute(k, name, ns).(string)] = substitute(e, name, ns)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = substitute(e, name, ns)
		}
		return out
	case string:
		return replaceWord(replaceWord(t, ns, namespaceHolder), name, nameHolder)
	}
	return v
}

// replaceWord returns s with each old that is a word of its own, neither
// preceded nor followed by a letter or a digit, replaced by new: the
// explored object explore-0's Deployment explore-0-cache, label
// memcached=explore-0, but not the annotations key of the namespace ns,
// nor the namespace testexplore-0kozf3 of explore-0.
func replaceWord(s, old, new string) string {
	if old == "" {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		if (i == 0 || !alphanumeric(s[i-1])) && (end == len(s) || !alphanumeric(s[end])) {
			b.WriteString(s[:i])
			b.WriteString(new)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func alphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// difference is the first place two outcomes differ: at a field of the
// status (kind ""), at a field of an owned object of kind, or in how
// many objects of kind each controls (path "").
type difference struct {
	kind         string
	path         string
	a, b         any
	names, other []string
}

// compare returns the first difference between a and b, or nil: the
// status first, then each kind's objects, kinds in order. Objects of a
// kind Volatile names alone are compared where both have one of the
// same normalised name.
func compare(a, b outcome, vs []volatile) *difference {
	if path, va, vb, ok := differ(a.status, b.status, "status"); ok {
		return &difference{path: path, a: va, b: vb}
	}
	kinds := slices.Sorted(maps.Keys(a.owned))
	for k := range b.owned {
		if _, ok := a.owned[k]; !ok {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	for _, kind := range kinds {
		as, bs := a.owned[kind], b.owned[kind]
		if volatileKind(kind, vs) {
			as, bs = common(as, bs), common(bs, as)
		}
		if len(as) != len(bs) {
			return &difference{kind: kind, names: ownedNames(as), other: ownedNames(bs)}
		}
		for i := range as {
			if path, va, vb, ok := differ(as[i].obj, bs[i].obj, ""); ok {
				return &difference{kind: kind, path: path, a: va, b: vb, names: []string{as[i].name}, other: []string{bs[i].name}}
			}
		}
	}
	return nil
}

// common returns the objects of as whose normalised name one of bs has.
func common(as, bs []owned) []owned {
	var out []owned
	for _, o := range as {
		if slices.ContainsFunc(bs, func(b owned) bool { return b.key == o.key }) {
			out = append(out, o)
		}
	}
	return out
}

func ownedNames(os []owned) []string {
	names := make([]string, len(os))
	for i, o := range os {
		names[i] = o.name
	}
	return names
}

// absent stands for a field one side hasn't.
type absent struct{}

// differ returns the first path, under path, at which a and b differ,
// and their values there, the keys of maps in order.
func differ(a, b any, path string) (string, any, any, bool) {
	switch at := a.(type) {
	case map[string]any:
		bt, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := sortedUnion(at, bt)
		for _, k := range keys {
			av, aok := at[k]
			bv, bok := bt[k]
			switch {
			case !aok:
				av = absent{}
			case !bok:
				bv = absent{}
			}
			if p, x, y, ok := differ(av, bv, join(path, k)); ok {
				return p, x, y, true
			}
		}
		return "", nil, nil, false
	case []any:
		bt, ok := b.([]any)
		if !ok || len(at) != len(bt) {
			break
		}
		for i := range at {
			if p, x, y, ok := differ(at[i], bt[i], fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, x, y, true
			}
		}
		return "", nil, nil, false
	}
	if reflect.DeepEqual(a, b) {
		return "", nil, nil, false
	}
	return path, a, b, true
}

// plainKey is a key a path names with a dot; any other is quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_$-]+$`)

// join returns path's key k, in Config.Volatile's syntax.
func join(path, k string) string {
	if !plainKey.MatchString(k) {
		return fmt.Sprintf("%s['%s']", path, k)
	}
	if path == "" {
		return k
	}
	return path + "." + k
}

// describe says where d is, with its two sides' values, each side named
// by the explored object's name there and how it came about, as in
// "explore-0" and "the fresh explore-0-fresh".
func (d *difference) describe(a, b string) string {
	switch {
	case d.kind == "":
		return fmt.Sprintf("%s: %s (%s), %s (%s)", d.path, value(d.a), a, value(d.b), b)
	case d.path == "":
		return fmt.Sprintf("the %s objects it controls: %s, %s", d.kind, count(d.names, a), count(d.other, b))
	}
	return fmt.Sprintf("the %s it controls, at %s: %s (%s's %s), %s (%s's %s)", d.kind, d.path,
		value(d.a), a, d.names[0], value(d.b), b, d.other[0])
}

// value prints a value of an outcome as JSON, or "absent".
func value(v any) string {
	if _, ok := v.(absent); ok {
		return "absent"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// count says how many of names there are, on side, and which.
func count(names []string, side string) string {
	if len(names) == 0 {
		return fmt.Sprintf("0 (%s)", side)
	}
	return fmt.Sprintf("%d (%s: %s)", len(names), side, strings.Join(names, ", "))
}

// sortedUnion returns the keys of a and of b, each once, in order.
func sortedUnion[A, B any](a map[string]A, b map[string]B) []string {
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
