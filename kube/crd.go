package kube

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/crd"
)

// PrinterColumn is a column kubectl get prints for a Resource's objects.
// Column makes one; its Description method describes it, as kubectl
// explains it, and its Priority method sets its priority: kubectl get
// prints a column of priority 0 always, and one above 0 only with -o wide.
type PrinterColumn = crd.PrinterColumn

// Column is a column named name that kubectl get prints, of the field
// field points to: a field of the value given to the Rules of the
// Resource's Spec or Status, or of a struct it nests, such as
// &status.ReadyReplicas. The column's type, format and JSONPath follow
// from the field.
func Column[T any](name string, field *T) PrinterColumn { return crd.Column(name, field) }

// ConditionColumn is a column named name that kubectl get prints, of the
// status (True, False or Unknown) of the condition of type conditionType
// among the conditions points to, such as
// ConditionColumn("Available", &status.Conditions, "Available"), whose
// JSONPath is .status.conditions[?(@.type=="Available")].status. CRD
// reports an empty or malformed conditionType with its other mistakes.
func ConditionColumn(name string, conditions *[]metav1.Condition, conditionType string) PrinterColumn {
	return crd.ConditionColumn(name, conditions, conditionType)
}

// CRD returns the resource's CustomResourceDefinition, named
// <Plural>.<Group>, with the status subresource, and the scale
// subresource when Scale is set. Its schema is reflected
// from Spec and Status as encoding/json encodes them, with the constraints
// of Rules, under an object's apiVersion, kind and metadata; spec is
// required. Without Versions it has one version, served unless Unserved,
// and stored, and no conversion. With Versions, the resource's own version
// comes first, the one stored, then each of Versions in its order, each
// with its own schema, columns, serving and deprecation; the API server,
// not this order, decides which version kubectl prefers (the highest by
// Kubernetes' version priority, v1 before v1beta1 before v1alpha1, among
// those served). Its conversion is None when every one of Versions is
// Unconverted, and else the Webhook that Conversion reaches at
// /convert/<Group>/<Plural>, taking ConversionReview v1.
//
// CRD returns one error that names every mistake it finds, each with its
// place: a missing Group, Version, Kind or Plural, a Scope that is neither
// Namespaced nor Cluster, a type that encodes itself and has no Schema, a
// map whose keys aren't strings, an interface, a channel, a function, a
// type that contains itself, a constraint that doesn't fit its field's
// type, a Field that names no field of the value given to Rules, or a
// field of a nested struct, a column with no name or another's, a
// ConditionColumn with no condition type or a malformed one, the mistakes
// of a Scale that Scale's doc lists, and two Rules, or two Schemas, for
// one type.
// Of Versions, each named by its place and its name: a Version neither
// Spoke nor Unconverted made, a Group, Kind, Plural or Scope not the
// hub's, ShortNames or Categories neither empty nor the hub's, Versions
// or a Conversion of its own, two versions of one name, a Spoke with a
// nil function (a missing conversion), or whose functions convert to
// other types than the hub's Spec and Status (a mistyped conversion), an
// Unconverted whose schema isn't the hub's, and a DeprecationWarning
// without Deprecated; and a Conversion missing when a Spoke converts
// through the webhook, set when none does, or with mistakes of its own.
// It doesn't compile CEL rules: the API server does, when the CRD is
// applied.
func (r Resource[Spec, Status]) CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	d := crd.Definition{
		Group:              r.Group,
		Version:            r.Version,
		Kind:               r.Kind,
		Plural:             r.Plural,
		Scope:              apiextensionsv1.ResourceScope(r.Scope),
		ShortNames:         r.ShortNames,
		Categories:         r.Categories,
		Spec:               reflect.TypeFor[Spec](),
		Status:             reflect.TypeFor[Status](),
		Rules:              r.Rules,
		Columns:            r.Columns,
		Scale:              r.Scale,
		Unserved:           r.Unserved,
		Deprecated:         r.Deprecated,
		DeprecationWarning: r.DeprecationWarning,
	}
	errs := r.versionMistakes()
	for _, v := range r.Versions {
		d.Versions = append(d.Versions, v.res.def)
		d.Versions[len(d.Versions)-1].Unconverted = v.unconverted
	}
	if r.Conversion != nil {
		errs = append(errs, r.Conversion.mistakes("Conversion")...)
		d.Webhook = r.Conversion.conversion(conversionPath(r.Group, r.Plural))
	}
	def, err := d.CRD()
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("kube: the CRD of %s: %w", r.name(), errors.Join(errs...))
	}
	return def, nil
}

// versionMistakes returns the mistakes in r's Versions that the domain
// can't see: those of the Go values Spoke and Unconverted were given.
func (r Resource[Spec, Status]) versionMistakes() []error {
	var errs []error
	hubSpec, hubStatus := reflect.TypeFor[Spec](), reflect.TypeFor[Status]()
	for i, v := range r.Versions {
		label := fmt.Sprintf("Versions[%d] (%q)", i, v.res.version)
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s: %s", label, fmt.Sprintf(format, args...)))
		}
		if !v.made() {
			fail("is a Version neither Spoke nor Unconverted made")
			continue
		}
		for _, n := range []struct{ field, got, want string }{
			{"Group", v.res.group, r.Group},
			{"Kind", v.res.kind, r.Kind},
			{"Plural", v.res.plural, r.Plural},
			{"Scope", string(v.res.scope), string(r.Scope)},
		} {
			if n.got != n.want {
				fail("its %s %q is not the storage version's %q: every version is one resource", n.field, n.got, n.want)
			}
		}
		if len(v.res.shortNames) > 0 && !slices.Equal(v.res.shortNames, r.ShortNames) {
			fail("its ShortNames %q are not the storage version's %q: leave them empty, the CRD has one set", v.res.shortNames, r.ShortNames)
		}
		if len(v.res.categories) > 0 && !slices.Equal(v.res.categories, r.Categories) {
			fail("its Categories %q are not the storage version's %q: leave them empty, the CRD has one set", v.res.categories, r.Categories)
		}
		if v.res.hasVersions {
			fail("has Versions of its own: only the storage version lists the others")
		}
		if v.res.hasConversion {
			fail("has a Conversion of its own: the storage version's says where the webhook is")
		}
		switch len(v.missing) {
		case 1:
			fail("missing conversion: the function %s is nil", v.missing[0])
		case 2:
			fail("missing conversion: the functions %s are nil", strings.Join(v.missing, " and "))
		}
		if v.hubSpec != nil && (v.hubSpec != hubSpec || v.hubStatus != hubStatus) {
			fail("mistyped conversion: its functions convert to and from Object[%s, %s], but the storage version is Object[%s, %s]", v.hubSpec, v.hubStatus, hubSpec, hubStatus)
		}
	}
	return errs
}

// name names the resource in errors: by its Kind, or by its Go type when
// the Kind is missing.
func (r Resource[Spec, Status]) name() string {
	if r.Kind != "" {
		return r.Kind
	}
	return reflect.TypeFor[Resource[Spec, Status]]().String()
}
