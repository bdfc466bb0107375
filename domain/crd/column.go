package crd

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// PrinterColumn is a column kubectl get prints for a resource's objects.
// Column makes one.
type PrinterColumn struct {
	name        string
	pointer     any
	description string
	priority    int32
	// condition is the type of the condition whose status the column
	// prints, when ConditionColumn made it; pointer then points to the
	// conditions.
	condition   string
	isCondition bool
}

// Column is a column named name that kubectl get prints, of the field
// field points to: a field of the value given to the Rules of the
// resource's spec or status type, or of a struct it nests, such as
// &status.ReadyReplicas. The column's type, format and JSONPath follow
// from the field.
func Column[T any](name string, field *T) PrinterColumn {
	return PrinterColumn{name: name, pointer: field}
}

// ConditionColumn is a column named name that kubectl get prints, of the
// status of the condition of type conditionType among the conditions
// points to, such as ConditionColumn("Available", &status.Conditions,
// "Available"): its JSONPath filters the list by type, as
// .status.conditions[?(@.type=="Available")].status, and its type is
// string. Definition.CRD reports an empty or malformed conditionType (the
// API server takes a qualified name, such as Available or
// example.com/Ready), as it reports every other mistake.
func ConditionColumn(name string, conditions *[]metav1.Condition, conditionType string) PrinterColumn {
	return PrinterColumn{name: name, pointer: conditions, condition: conditionType, isCondition: true}
}

// Description describes the column, as kubectl explains it.
func (c PrinterColumn) Description(text string) PrinterColumn {
	c.description = text
	return c
}

// Priority is the column's priority: kubectl get prints a column of
// priority 0 always, and one above 0 only with -o wide.
func (c PrinterColumn) Priority(p int32) PrinterColumn {
	c.priority = p
	return c
}

// ageColumn is the column kubectl get prints by default, which a CRD's
// own columns replace unless they list it.
var ageColumn = apiextensionsv1.CustomResourceColumnDefinition{
	Name:     "Age",
	Type:     "date",
	JSONPath: ".metadata.creationTimestamp",
}

// columns resolves d's columns against the Rules' values of the spec's and
// status's types, whose schemas roots holds by name.
func (b *builder) columns(d VersionDefinition, roots map[string]*apiextensionsv1.JSONSchemaProps) []apiextensionsv1.CustomResourceColumnDefinition {
	if len(d.Columns) == 0 {
		return nil
	}
	out := make([]apiextensionsv1.CustomResourceColumnDefinition, 0, len(d.Columns)+1)
	named := map[string]int{}
	for i, c := range d.Columns {
		label := fmt.Sprintf("Columns[%d] (%q)", i, c.name)
		if c.name == "" {
			b.failf(label, "has no name")
		} else if prior, ok := named[c.name]; ok {
			b.failf(label, "has the name of Columns[%d]", prior)
		} else {
			named[c.name] = i
		}
		path, s, ok := b.columnPath(label, c.pointer, []root{{"spec", d.Spec}, {"status", d.Status}}, roots)
		if !ok {
			continue
		}
		typ, format := columnType(s)
		if c.isCondition {
			cp, ok := b.conditionPath(label, path, c.condition)
			if !ok {
				continue
			}
			path, typ, format = cp, "string", ""
		}
		out = append(out, apiextensionsv1.CustomResourceColumnDefinition{
			Name:        c.name,
			Type:        typ,
			Format:      format,
			Description: c.description,
			Priority:    c.priority,
			JSONPath:    path,
		})
	}
	if _, ok := named[ageColumn.Name]; !ok {
		out = append(out, ageColumn)
	}
	return out
}

// conditionPath returns the JSONPath of the status of the condition of
// type conditionType in the conditions at path. A condition's type is a
// qualified name, as the API server validates it, so it has no quote
// that would end the filter's string.
func (b *builder) conditionPath(label, path, conditionType string) (string, bool) {
	if conditionType == "" {
		b.failf(label, "has no condition type")
		return "", false
	}
	if p := validation.IsQualifiedName(conditionType); len(p) > 0 {
		b.failf(label, "has the condition type %q: %s", conditionType, strings.Join(p, "; "))
		return "", false
	}
	return path + `[?(@.type=="` + conditionType + `")].status`, true
}

// root is the Go type of a resource's spec or status, by its name in the
// object.
type root struct {
	name string
	typ  reflect.Type
}

// columnPath returns the JSONPath of the field pointer points to, and its
// schema, found in the Rules' value of one of roots' types.
func (b *builder) columnPath(label string, pointer any, roots []root, schemas map[string]*apiextensionsv1.JSONSchemaProps) (string, *apiextensionsv1.JSONSchemaProps, bool) {
	names, chain, ok := b.fieldAt(label, pointer, roots, schemas)
	if !ok {
		return "", nil, false
	}
	return jsonPath(names), chain[len(chain)-1], true
}

// fieldAt finds the field pointer points to in the Rules' value of one of
// roots' types, and returns the JSON names from the root's to the field's,
// and the schema each names, found in schemas by the root's name: nil
// where the schema has no such property.
func (b *builder) fieldAt(label string, pointer any, roots []root, schemas map[string]*apiextensionsv1.JSONSchemaProps) ([]string, []*apiextensionsv1.JSONSchemaProps, bool) {
	fp := reflect.ValueOf(pointer)
	if !fp.IsValid() || fp.Kind() != reflect.Pointer || fp.IsNil() {
		b.failf(label, "has a nil pointer, which names no field")
		return nil, nil, false
	}
	addr, ft := fp.Pointer(), fp.Type().Elem()
	for _, r := range roots {
		tr := b.rules[deref(r.typ)]
		if tr == nil || tr.isSchema {
			continue
		}
		v := tr.value
		if !v.IsValid() || v.IsNil() || v.Elem().Kind() != reflect.Struct {
			continue
		}
		hops, ok := locate(v.Elem(), addr, ft)
		if !ok {
			continue
		}
		names := []string{r.name}
		for _, h := range hops {
			ns, ok := b.jsonNames(h.owner, h.index)
			if !ok {
				b.failf(label, "names %s, which encoding/json doesn't encode", goPath(hops))
				return nil, nil, false
			}
			names = append(names, ns...)
		}
		s := schemas[r.name]
		chain := []*apiextensionsv1.JSONSchemaProps{s}
		for _, n := range names[1:] {
			if s != nil {
				if p, ok := s.Properties[n]; ok {
					s = &p
				} else {
					s = nil
				}
			}
			chain = append(chain, s)
		}
		return names, chain, true
	}
	b.failf(label, "points into neither the value given to the Rules of %s nor that of %s", deref(roots[0].typ), deref(roots[1].typ))
	return nil, nil, false
}

// jsonNames returns the names encoding/json gives the field of struct t
// at index, and those of the structs it nests on the way, when it encodes
// the field.
func (b *builder) jsonNames(t reflect.Type, index []int) ([]string, bool) {
	for _, f := range b.fieldsOf(t).fields {
		switch {
		case slices.Equal(f.index, index):
			return []string{f.name}, true
		case len(f.index) < len(index) && slices.Equal(f.index, index[:len(f.index)]):
			rest, ok := b.jsonNames(deref(f.typ), index[len(f.index):])
			return append([]string{f.name}, rest...), ok
		}
	}
	return nil, false
}

// jsonPath writes names as the JSONPath kubectl get evaluates.
func jsonPath(names []string) string {
	var b strings.Builder
	for _, n := range names {
		if simpleName(n) {
			b.WriteString("." + n)
			continue
		}
		b.WriteString("['" + strings.ReplaceAll(n, "'", `\'`) + "']")
	}
	return b.String()
}

// simpleName reports whether n is a name kubectl's JSONPath reads after
// a dot: a letter or _, then letters, digits and _ (ASCII). A function,
// not a regular expression in a package variable, so that no program
// pays for compiling one when it starts.
func simpleName(n string) bool {
	for i, c := range []byte(n) {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return n != ""
}

// columnType returns the column type and format kubectl get prints a
// field of schema s with.
func columnType(s *apiextensionsv1.JSONSchemaProps) (string, string) {
	if s == nil {
		return "string", ""
	}
	switch s.Type {
	case "integer", "number":
		switch s.Format {
		case "int32", "int64", "float", "double":
			return s.Type, s.Format
		}
		return s.Type, ""
	case "boolean":
		return s.Type, ""
	case "string":
		if s.Format == "date-time" {
			return "date", ""
		}
	}
	return "string", ""
}
