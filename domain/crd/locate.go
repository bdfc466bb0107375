package crd

import (
	"reflect"
	"strings"
)

// hop is one step from a struct to one of its fields: the field's index
// path in owner, through the structs owner embeds. A pointer into a value
// is found as the hops from the value to the field it points to; one hop
// is a field of the value's own type, promoted ones included, and more
// are fields of nested structs.
type hop struct {
	owner reflect.Type
	index []int
}

// goName names the field a hop reaches as Go code would, from its owner:
// Spec.Template, or Spec.Base.Port for a promoted field.
func (h hop) goName() string {
	var b strings.Builder
	b.WriteString(h.owner.Name())
	t := h.owner
	for _, i := range h.index {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		f := t.Field(i)
		b.WriteString(".")
		b.WriteString(f.Name)
		t = f.Type
	}
	return b.String()
}

// goPath names the field hops reach, as Go code would from the first
// hop's owner: Spec.Template.Port.
func goPath(hops []hop) string {
	var b strings.Builder
	for i, h := range hops {
		name := h.goName()
		if i > 0 {
			_, name, _ = strings.Cut(name, ".")
			b.WriteString(".")
		}
		b.WriteString(name)
	}
	return b.String()
}

// locate finds the field of the struct value v that addr, a pointer of
// type t, points to: a field of v itself, a field promoted from a struct v
// embeds (through an embedded pointer that isn't nil, too), or a field of
// a nested struct, through struct fields and pointers that aren't nil. It
// reads v's pointers, and nothing else of it. It returns false when addr
// is no field of v.
func locate(v reflect.Value, addr uintptr, t reflect.Type) ([]hop, bool) {
	return locateIn(v, addr, t, map[visit]bool{})
}

// visit is a struct value locate is searching, which pointers may lead
// back to. A struct and its first field share an address, so the type
// tells them apart.
type visit struct {
	addr uintptr
	typ  reflect.Type
}

func locateIn(v reflect.Value, addr uintptr, t reflect.Type, seen map[visit]bool) ([]hop, bool) {
	st := v.Type()
	base := v.UnsafeAddr()
	if seen[visit{base, st}] {
		return nil, false
	}
	seen[visit{base, st}] = true
	defer delete(seen, visit{base, st})

	for i := range st.NumField() {
		sf := st.Field(i)
		at := base + sf.Offset
		if at == addr && sf.Type == t {
			return []hop{{owner: st, index: []int{i}}}, true
		}
		var inner reflect.Value
		switch fv := v.Field(i); {
		case sf.Type.Kind() == reflect.Struct:
			if addr >= at && addr < at+sf.Type.Size() {
				inner = fv
			}
		case sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct && !fv.IsNil():
			e := fv.Elem()
			if a := e.UnsafeAddr(); addr >= a && addr < a+e.Type().Size() {
				inner = e
			}
		}
		if !inner.IsValid() {
			continue
		}
		hops, ok := locateIn(inner, addr, t, seen)
		if !ok {
			continue
		}
		if sf.Anonymous {
			hops[0] = hop{owner: st, index: append([]int{i}, hops[0].index...)}
			return hops, true
		}
		return append([]hop{{owner: st, index: []int{i}}}, hops...), true
	}
	return nil, false
}
