package kube

import (
	"fmt"
	"reflect"

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
// <Plural>.<Group>, with one version, served and stored, with the status
// subresource. Its schema is reflected from Spec and Status as
// encoding/json encodes them, with the constraints of Rules, under an
// object's apiVersion, kind and metadata; spec is required.
//
// CRD returns one error that names every mistake it finds, each with its
// place: a missing Group, Version, Kind or Plural, a Scope that is neither
// Namespaced nor Cluster, a type that encodes itself and has no Schema, a
// map whose keys aren't strings, an interface, a channel, a function, a
// type that contains itself, a constraint that doesn't fit its field's
// type, a Field that names no field of the value given to Rules, or a
// field of a nested struct, a column with no name or another's, a
// ConditionColumn with no condition type or a malformed one, and two Rules, or two Schemas, for one type.
// It doesn't compile CEL rules: the API server does, when the CRD is
// applied.
func (r Resource[Spec, Status]) CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	d := crd.Definition{
		Group:      r.Group,
		Version:    r.Version,
		Kind:       r.Kind,
		Plural:     r.Plural,
		Scope:      apiextensionsv1.ResourceScope(r.Scope),
		ShortNames: r.ShortNames,
		Categories: r.Categories,
		Spec:       reflect.TypeFor[Spec](),
		Status:     reflect.TypeFor[Status](),
		Rules:      r.Rules,
		Columns:    r.Columns,
	}
	def, err := d.CRD()
	if err != nil {
		return nil, fmt.Errorf("kube: the CRD of %s: %w", r.name(), err)
	}
	return def, nil
}

// name names the resource in errors: by its Kind, or by its Go type when
// the Kind is missing.
func (r Resource[Spec, Status]) name() string {
	if r.Kind != "" {
		return r.Kind
	}
	return reflect.TypeFor[Resource[Spec, Status]]().String()
}
