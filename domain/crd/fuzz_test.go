package crd

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FuzzReflect builds a struct type from the fuzzer's bytes, with
// reflect.StructOf, and checks Reflect against encoding/json itself:
//
//   - Reflect fails exactly when the type holds something encoding/json
//     can't encode or a schema can't express, in a field it encodes;
//   - otherwise, a value with every field set encodes to JSON that the
//     schema describes exactly: every key a property, every property a
//     key, every value of its property's type;
//   - the zero value encodes every required property, as null only where
//     the schema is nullable, since the API server refuses a null
//     elsewhere;
//   - Reflect's schema is the same every time.
func FuzzReflect(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{5, 0, 0, 1, 1, 2, 2, 3, 3},
		{4, 12, 3, 6, 0, 2, 1, 8, 2, 9, 6, 3},
		{3, 13, 0, 1, 13, 3, 2, 13, 4},
		{6, 12, 4, 0, 1, 2, 3, 7, 5, 14, 0, 14, 1, 14, 2, 14, 3},
		{2, 12, 2, 12, 2, 2, 1, 4, 3, 4, 7, 5},
		{3, 10, 11, 12, 1, 9, 5, 8, 4, 6, 4},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &generator{data: data}
		typ, bad := g.structType(0)

		s, err := Reflect(typ, "spec")
		if bad != (err != nil) {
			t.Fatalf("%v: the type holds something a schema can't express: %v; Reflect's error: %v", typ, bad, err)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "spec") {
				t.Fatalf("an error without its place: %v", err)
			}
			return
		}
		again, err := Reflect(typ, "spec")
		noError(t, err)
		equal(t, asJSON(t, s), asJSON(t, again), "the schema, reflected again")

		full := reflect.New(typ).Elem()
		fill(full)
		raw, err := json.Marshal(full.Interface())
		noError(t, err)
		if err := conforms(decode(t, raw), &s, "spec", true); err != nil {
			t.Fatalf("%v\nencodes as %s\nwhich the schema doesn't describe: %v\n%s", typ, raw, err, asJSON(t, s))
		}

		zero, err := json.Marshal(reflect.New(typ).Elem().Interface())
		noError(t, err)
		if err := conforms(decode(t, zero), &s, "spec", false); err != nil {
			t.Fatalf("%v\nencodes its zero value as %s: %v\n%s", typ, zero, err, asJSON(t, s))
		}
	})
}

// generator makes types from bytes; when they run out, it reads zeros.
type generator struct {
	data  []byte
	names int
}

func (g *generator) next() byte {
	if len(g.data) == 0 {
		return 0
	}
	b := g.data[0]
	g.data = g.data[1:]
	return b
}

// typ returns a type, and whether encoding/json can't encode it or a
// schema can't express it.
func (g *generator) typ(depth int) (reflect.Type, bool) {
	if depth > 3 {
		return reflect.TypeFor[string](), false
	}
	switch g.next() % 15 {
	case 0:
		return reflect.TypeFor[bool](), false
	case 1:
		return reflect.TypeFor[int](), false
	case 2:
		return reflect.TypeFor[int32](), false
	case 3:
		return reflect.TypeFor[uint16](), false
	case 4:
		return reflect.TypeFor[float64](), false
	case 5:
		return reflect.TypeFor[[]byte](), false
	case 6:
		elem, bad := g.typ(depth + 1)
		return reflect.PointerTo(elem), bad
	case 7:
		elem, bad := g.typ(depth + 1)
		return reflect.SliceOf(elem), bad
	case 8:
		elem, bad := g.typ(depth + 1)
		return reflect.ArrayOf(2, elem), bad
	case 9:
		elem, bad := g.typ(depth + 1)
		return reflect.MapOf(reflect.TypeFor[string](), elem), bad
	case 10, 11, 12:
		return g.structType(depth + 1)
	case 13:
		return []reflect.Type{
			reflect.TypeFor[chan int](), reflect.TypeFor[func()](), reflect.TypeFor[any](),
			reflect.TypeFor[map[int]string](), reflect.TypeFor[complex64](),
		}[g.next()%5], true
	default:
		return []reflect.Type{
			reflect.TypeFor[metav1.Time](), reflect.TypeFor[resource.Quantity](), reflect.TypeFor[intstr.IntOrString](),
			reflect.TypeFor[time.Duration](), reflect.TypeFor[apiextensionsv1.JSON](), reflect.TypeFor[string](),
		}[g.next()%6], false
	}
}

// structType returns a struct type of fields of generated types, with
// tags and embedded structs, whose names are unique, so that no field hides
// another, and a last field of its own.
func (g *generator) structType(depth int) (reflect.Type, bool) {
	var (
		fields []reflect.StructField
		bad    bool
	)
	for range g.next() % 6 {
		g.names++
		name := fmt.Sprintf("F%d", g.names)
		ft, fieldBad := g.typ(depth + 1)
		f := reflect.StructField{Name: name, Type: ft}
		switch g.next() % 9 {
		case 1:
			f.Tag = reflect.StructTag(fmt.Sprintf(`json:"f%d"`, g.names))
		case 2:
			f.Tag = `json:"-"`
			fieldBad = false
		case 3:
			f.Tag = `json:",omitempty"`
		case 4:
			f.Tag = reflect.StructTag(fmt.Sprintf(`json:"f%d,omitempty"`, g.names))
		case 5:
			f.Tag = reflect.StructTag(fmt.Sprintf(`json:"f%d,string"`, g.names))
		case 6:
			f.Tag = `json:",omitzero"`
		case 7, 8:
			// Embedded, when it is a struct or a pointer to one, without
			// methods, which StructOf can't promote. A struct literal's
			// type has no name to name the field, so the name stays.
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && reflect.PointerTo(et).NumMethod() == 0 {
				f.Anonymous = true
			}
		}
		bad = bad || fieldBad
		fields = append(fields, f)
	}
	// A last field that is always encoded and set, so that no filled
	// struct is zero, which omitempty and omitzero would leave out.
	g.names++
	fields = append(fields, reflect.StructField{Name: fmt.Sprintf("Set%d", g.names), Type: reflect.TypeFor[bool]()})
	return reflect.StructOf(fields), bad
}

// fill sets every field v holds to a value that isn't zero.
func fill(v reflect.Value) {
	switch v.Addr().Interface().(type) {
	case *metav1.Time:
		v.Set(reflect.ValueOf(metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))))
		return
	case *resource.Quantity:
		v.Set(reflect.ValueOf(resource.MustParse("1Gi")))
		return
	case *intstr.IntOrString:
		v.Set(reflect.ValueOf(intstr.FromInt32(8080)))
		return
	case *apiextensionsv1.JSON:
		v.Set(reflect.ValueOf(apiextensionsv1.JSON{Raw: []byte(`{"any":[1,"json"]}`)}))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.String:
		v.SetString("s")
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Map:
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	}
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	noError(t, d.Decode(&v))
	return v
}

// conforms checks v against s, as the API server's pruning and validation
// would: every key of an object a property (or pruning would drop it),
// every value of its schema's type, and every required property there.
// full says v has every field set, so every property must be there too.
func conforms(v any, s *apiextensionsv1.JSONSchemaProps, place string, full bool) error {
	if v == nil {
		// A null property is checked where its object is. A null item
		// of a list or value of a map is what the end user put there,
		// not what encoding/json makes of a field's zero value.
		return nil
	}
	switch {
	case s.XIntOrString:
		switch v.(type) {
		case json.Number, string:
			return nil
		}
		return fmt.Errorf("%s: %v is neither an integer nor a string", place, v)
	case s.Type == "" && s.XPreserveUnknownFields != nil:
		return nil
	}
	switch s.Type {
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %v is no boolean", place, v)
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s: %v is no number", place, v)
		}
		if _, err := n.Int64(); s.Type == "integer" && err != nil {
			return fmt.Errorf("%s: %v is no integer", place, v)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %v is no string", place, v)
		}
		switch s.Format {
		case "byte":
			if _, err := base64.StdEncoding.DecodeString(str); err != nil {
				return fmt.Errorf("%s: %q is no base64: %w", place, str, err)
			}
		case "date-time":
			if _, err := time.Parse(time.RFC3339, str); err != nil {
				return fmt.Errorf("%s: %q is no date-time: %w", place, str, err)
			}
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %v is no array", place, v)
		}
		for i, item := range items {
			if err := conforms(item, s.Items.Schema, fmt.Sprintf("%s[%d]", place, i), full); err != nil {
				return err
			}
		}
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v is no object", place, v)
		}
		if s.AdditionalProperties != nil {
			for k, e := range obj {
				if err := conforms(e, s.AdditionalProperties.Schema, place+"."+k, full); err != nil {
					return err
				}
			}
			return nil
		}
		for k, e := range obj {
			p, ok := s.Properties[k]
			if !ok {
				return fmt.Errorf("%s: %s is no property, so the API server would prune it", place, k)
			}
			if e == nil && !p.Nullable && p.Default == nil {
				// encoding/json writes a nil slice, map or pointer, or a
				// zero metav1.Time, as null, which the API server prunes
				// from a property that isn't nullable: it is missing.
				if full || slices.Contains(s.Required, k) {
					return fmt.Errorf("%s: %s is null, which the API server prunes, and then misses", place, k)
				}
				continue
			}
			if err := conforms(e, &p, place+"."+k, full); err != nil {
				return err
			}
		}
		for name := range s.Properties {
			if _, ok := obj[name]; !ok && (full || slices.Contains(s.Required, name)) {
				return fmt.Errorf("%s: %s is missing", place, name)
			}
		}
	default:
		return fmt.Errorf("%s: a schema of no type", place)
	}
	return nil
}
