package crd

import (
	"reflect"
	"testing"
)

type (
	leaf struct {
		N int
	}
	first struct {
		Leaf leaf
		M    int
	}
	holder struct {
		first
		*leafPtr
		Nested first
		Ptr    *first
		Self   *holder
		Empty  struct{}
		After  struct{}
	}
	leafPtr struct {
		P int
	}
)

func TestLocate_finds_the_field_a_pointer_names(t *testing.T) {
	v := &holder{leafPtr: &leafPtr{}, Ptr: &first{}}
	v.Self = v // a cycle locate must not follow forever
	for _, c := range []struct {
		name  string
		ptr   any
		want  string
		found bool
	}{
		{"a field of its own", &v.Nested, "holder.Nested", true},
		{"a promoted field at the value's own address", &v.Leaf, "holder.first.Leaf", true},
		{"a promoted field of a promoted field at the value's own address", &v.Leaf.N, "holder.first.Leaf+leaf.N", true},
		{"a field promoted through an embedded pointer", &v.P, "holder.leafPtr.P", true},
		{"a field of a nested struct", &v.Nested.M, "holder.Nested+first.M", true},
		{"a field through a pointer", &v.Ptr.Leaf.N, "holder.Ptr+first.Leaf+leaf.N", true},
		{"a zero-size field, by its type", &v.Empty, "holder.Empty", true},
		{"a field of another value", &(&holder{}).Nested, "", false},
		{"an address of another type", nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var (
				addr uintptr
				typ  reflect.Type
			)
			if c.ptr == nil {
				// v.Nested.M's address, taken as an int64's.
				addr, typ = reflect.ValueOf(&v.Nested.M).Pointer(), reflect.TypeFor[int64]()
			} else {
				pv := reflect.ValueOf(c.ptr)
				addr, typ = pv.Pointer(), pv.Type().Elem()
			}
			hops, ok := locate(reflect.ValueOf(v).Elem(), addr, typ)
			equal(t, c.found, ok, "found")
			var got string
			for i, h := range hops {
				if i > 0 {
					got += "+"
				}
				got += h.goName()
			}
			equal(t, c.want, got, "the hops")
		})
	}
}
