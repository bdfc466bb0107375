package kube

import (
	"fmt"
	"reflect"
)

// handleDepth is how deeply unwatchedHandles looks into a Reconciler's
// fields: deep enough for a Reconciler that holds its Caches in a struct
// of its own, and no deeper, since the fields of clients and the like
// hold no Cache.
const handleDepth = 4

// handleType is the interface every Cache and Index implements.
var handleType = reflect.TypeFor[handle]()

// unwatchedHandles returns a mistake for each Cache and Index held in
// rec's fields, its fields' fields and so on, that the Controller doesn't
// watch or keep: a Reconciler that reads one would fail on every read.
// It reads unexported fields too, and never calls a method of rec. A
// Cache held only in a closure, such as a ReconcilerFunc's, isn't found:
// its reads fail, naming it.
func unwatchedHandles(rec any, p commonParts) []error {
	ours := map[uintptr]bool{}
	for _, r := range p.related {
		ours[r.cache.handlePointer()] = true
	}
	for _, x := range p.indexes {
		ours[x.handlePointer()] = true
	}
	var errs []error
	seen := map[uintptr]bool{}
	var visit func(v reflect.Value, path string, depth int)
	visit = func(v reflect.Value, path string, depth int) {
		if depth > handleDepth {
			return
		}
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				visit(v.Elem(), path, depth)
			}
		case reflect.Pointer:
			if v.IsNil() {
				return
			}
			ptr := v.Pointer()
			if v.Type().Implements(handleType) {
				if !ours[ptr] {
					errs = append(errs, fmt.Errorf("kube: the Reconciler's field %s holds a %v, which the Controller doesn't watch or keep: pass kube.Watches or kube.Indexes with it to NewController", path, v.Type()))
				}
				return
			}
			if seen[ptr] {
				return
			}
			seen[ptr] = true
			visit(v.Elem(), path, depth+1)
		case reflect.Struct:
			t := v.Type()
			for i := range t.NumField() {
				name := t.Field(i).Name
				if path != "" {
					name = path + "." + name
				}
				visit(v.Field(i), name, depth+1)
			}
		}
	}
	visit(reflect.ValueOf(rec), "", 0)
	return errs
}
