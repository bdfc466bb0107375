package crd

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
)

// jsonField is one field of a struct as encoding/json encodes it: a
// property of the struct's schema.
type jsonField struct {
	name   string
	tagged bool         // the json tag gives the name
	index  []int        // the field's index path, through embedded structs
	typ    reflect.Type // the field's type
	omit   bool         // the tag has omitempty or omitzero
	quoted bool         // the tag's string option applies
	// viaPointer says the field is promoted from an embedded pointer, which
	// leaves it out when nil.
	viaPointer bool
}

// structFields is what encoding/json makes of a struct type: the fields it
// encodes, the embedded structs it inlines, and the names it writes for no
// field because two fields at the same depth claim them.
type structFields struct {
	fields   []jsonField
	embedded []reflect.Type
	hidden   []hiddenName
}

// hiddenName is a name two or more fields claim at the same depth, so
// encoding/json writes none of them.
type hiddenName struct {
	name   string
	fields []jsonField
}

// fieldsOf returns the fields encoding/json encodes for struct type t, in
// the order it encodes them, by the rules of encoding/json's typeFields:
// unexported and json:"-" fields are skipped, an embedded struct without
// a name in its tag is inlined, and of fields with one name the shallowest
// wins, then the tagged one, and a tie hides them all.
func fieldsOf(t reflect.Type) structFields {
	type pending struct {
		typ        reflect.Type
		index      []int
		viaPointer bool
	}
	var (
		out              structFields
		fields           []jsonField
		current          []pending
		next             = []pending{{typ: t}}
		count, nextCount map[reflect.Type]int
		visited          = map[reflect.Type]bool{}
	)
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			if f.typ != t {
				out.embedded = append(out.embedded, f.typ)
			}
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				parsed := parseTag(tag)
				name := parsed.name
				index := append(slices.Clip(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if parsed.quoted {
					switch ft.Kind() {
					case reflect.Bool,
						reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64,
						reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					field := jsonField{
						name:       name,
						tagged:     name != "",
						index:      index,
						typ:        sf.Type,
						omit:       parsed.omitEmpty || parsed.omitZero,
						quoted:     quoted,
						viaPointer: f.viaPointer,
					}
					if field.name == "" {
						field.name = sf.Name
					}
					fields = append(fields, field)
					if count[f.typ] > 1 {
						// The struct is embedded twice at this depth, so
						// its fields tie with themselves: a second copy
						// lets the tie below hide them, as encoding/json
						// does.
						fields = append(fields, field)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, pending{
						typ:        ft,
						index:      index,
						viaPointer: f.viaPointer || sf.Type.Kind() == reflect.Pointer,
					})
				}
			}
		}
	}

	slices.SortStableFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		same := fields[i:j]
		switch {
		case len(same) == 1:
			out.fields = append(out.fields, same[0])
		case len(same[0].index) == len(same[1].index) && same[0].tagged == same[1].tagged:
			tied := []jsonField{same[0]}
			for _, f := range same[1:] {
				if len(f.index) == len(same[0].index) && f.tagged == same[0].tagged && !slices.Equal(f.index, tied[len(tied)-1].index) {
					tied = append(tied, f)
				}
			}
			out.hidden = append(out.hidden, hiddenName{name: same[0].name, fields: tied})
		default:
			out.fields = append(out.fields, same[0])
		}
		i = j
	}
	slices.SortFunc(out.fields, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// jsonTag is what a field's json tag says: the name it gives the field,
// if any, and its options.
type jsonTag struct {
	name                string
	omitEmpty, omitZero bool
	quoted              bool
}
