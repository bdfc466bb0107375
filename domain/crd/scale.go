package crd

import (
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Replicas is the Go type of a replica count that the scale subresource
// reads and writes: an int32 or an int64, or a pointer to one. The API
// server reads either as a number and writes an int32's worth.
type Replicas interface {
	~int32 | ~int64 | *int32 | *int64
}

// ScaleSubresource is a resource's scale subresource, /scale, which
// kubectl scale and a HorizontalPodAutoscaler read and write as an
// autoscaling/v1 Scale: its spec.replicas is a field of the resource's
// spec, its status.replicas and status.selector fields of its status (the
// selector may be in the spec). Scale makes one; the zero
// ScaleSubresource is none.
type ScaleSubresource struct {
	// set says Scale made it.
	set bool
	// spec and status point to the replica counts, in the values given
	// to the Rules of the resource's spec and status types.
	spec, status any
	// selector points to the label selector, a string; selectorSet says
	// Selector was called, with a nil pointer too.
	selector    *string
	selectorSet bool
}

// Scale is a scale subresource whose Scale's spec.replicas is the field
// spec points to, such as &spec.Replicas, and whose status.replicas is the
// field status points to, such as &status.Replicas: fields of the values
// given to the Rules of the resource's spec and status types, or of
// structs they nest. The API server sets spec's field when the Scale's
// replicas are written; the controller reports status's.
func Scale[Spec, Status Replicas](spec *Spec, status *Status) ScaleSubresource {
	s := ScaleSubresource{set: true}
	// A nil pointer stays an untyped nil, which fieldAt reports.
	if spec != nil {
		s.spec = spec
	}
	if status != nil {
		s.status = status
	}
	return s
}

// Selector sets the Scale's status.selector to the field field points to,
// a label selector in its string form, such as app=memcached,
// memcached=cache, which the controller reports: a field of the value
// given to the Rules of the resource's status or spec type. A
// HorizontalPodAutoscaler needs it to find the pods whose metrics it
// reads; kubectl scale doesn't.
func (s ScaleSubresource) Selector(field *string) ScaleSubresource {
	s.selector, s.selectorSet = field, true
	return s
}

// IsZero reports whether s is the zero ScaleSubresource: no scale
// subresource.
func (s ScaleSubresource) IsZero() bool { return !s.set }

// scale returns the CRD's scale subresource of s, whose fields are in the
// Rules' values of roots' types, with their schemas in schemas by the
// root's name, or nil after reporting its mistakes: a field of the wrong
// root or of the wrong type in the schema, one that may be null, a spec
// replicas field that may be missing, and a name with a dot, which the
// API server's paths can't hold.
func (b *builder) scale(s ScaleSubresource, roots []root, schemas map[string]*apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceSubresourceScale {
	ok := true
	path := func(label string, pointer any, in, typ string, present bool) string {
		p, good := b.scalePath(label, pointer, roots, schemas, in, typ, present)
		ok = ok && good
		return p
	}
	out := &apiextensionsv1.CustomResourceSubresourceScale{
		SpecReplicasPath:   path("Scale.SpecReplicas", s.spec, "spec", "integer", true),
		StatusReplicasPath: path("Scale.StatusReplicas", s.status, "status", "integer", false),
	}
	if s.selectorSet {
		var pointer any
		if s.selector != nil {
			pointer = s.selector
		}
		p := path("Scale.Selector", pointer, "", "string", false)
		out.LabelSelectorPath = &p
	}
	if !ok {
		return nil
	}
	return out
}

// scalePath returns the path the API server takes of the field pointer
// points to, in the dot notation it splits at each dot, such as
// .spec.replicas, and whether it has no mistake: it is a field of the root
// in, or of either when in is "", whose schema has the type typ and is
// not nullable, with no dot in its names, and, when present, is always
// there: required in each object on its path, or defaulted.
func (b *builder) scalePath(label string, pointer any, roots []root, schemas map[string]*apiextensionsv1.JSONSchemaProps, in, typ string, present bool) (string, bool) {
	names, chain, found := b.fieldAt(label, pointer, roots, schemas)
	if !found {
		return "", false
	}
	ok := true
	fail := func(format string, args ...any) {
		b.failf(label, format, args...)
		ok = false
	}
	display := jsonPath(names)
	if in != "" && names[0] != in {
		fail("is %s, a field of the %s: %s", display, names[0], whose[in])
		return "", false
	}
	for _, n := range names {
		if strings.Contains(n, ".") {
			fail("is %s, whose name %q has a dot: the API server splits its path to the field at each dot", display, n)
			return "", false
		}
	}
	switch leaf := chain[len(chain)-1]; {
	case leaf == nil:
		// The schema's own mistake is reported where it is.
	case leaf.Type != typ:
		fail("is %s, %s in the schema: the API server reads it as %s", display, article(typeOf(leaf)), article(typ))
	case leaf.Nullable:
		fix := "give the field omitempty"
		if present {
			fix = "make the field no pointer, or give it omitempty and a Default"
		}
		fail("is %s, which may be null: the API server can't read null as %s; %s, or leave out Nullable", display, article(typ), fix)
	}
	if present {
		for i := 1; i < len(names); i++ {
			parent, child := chain[i-1], chain[i]
			if parent == nil || child == nil || slices.Contains(parent.Required, names[i]) || child.Default != nil {
				continue
			}
			optional := "it is optional"
			if i < len(names)-1 {
				optional = jsonPath(names[:i+1]) + " is optional"
			}
			fail("is %s, which may be missing, as %s and has no Default: the API server fails every GET of the scale of an object without it, as an autoscaler makes; make it required, or give it a Default", display, optional)
			break
		}
	}
	return "." + strings.Join(names, "."), ok
}

// whose says whose field a replica count is, for an error that finds it
// in the other root.
var whose = map[string]string{
	"spec":   "the replicas that kubectl scale and an autoscaler set are a field of the spec",
	"status": "the replicas that the controller reports are a field of the status",
}
