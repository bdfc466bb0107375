package crd

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Definition declares a custom resource: its names, its scope, the Go
// types of its spec and status, their TypeRules, and the columns kubectl
// get prints. Version, Spec, Status, Rules, Columns, Unserved, Deprecated
// and DeprecationWarning are those of its storage version, the hub;
// Versions are its other versions.
type Definition struct {
	Group, Version, Kind, Plural string
	Scope                        apiextensionsv1.ResourceScope
	ShortNames, Categories       []string
	Spec, Status                 reflect.Type
	Rules                        []TypeRules
	Columns                      []PrinterColumn
	// Scale is the storage version's scale subresource; the zero
	// ScaleSubresource is none.
	Scale ScaleSubresource
	// Unserved, Deprecated and DeprecationWarning are the storage
	// version's, as VersionDefinition's are its own.
	Unserved, Deprecated bool
	DeprecationWarning   string
	// Versions are the resource's other versions, written after the
	// storage version in their order.
	Versions []VersionDefinition
	// Webhook is how the API server reaches the conversion webhook, which
	// converts the versions that are not Unconverted. It is a mistake when
	// one is and Webhook is nil, and when none is and Webhook is set.
	Webhook *apiextensionsv1.WebhookClientConfig
}

// VersionDefinition is one version of a resource besides its storage
// version: its name, the Go types of its spec and status, their TypeRules,
// its columns, its scale subresource, and whether it is served and
// deprecated.
type VersionDefinition struct {
	Name         string
	Spec, Status reflect.Type
	Rules        []TypeRules
	Columns      []PrinterColumn
	// Scale is the version's scale subresource; the zero ScaleSubresource
	// is none.
	Scale ScaleSubresource
	// Unserved says the API server doesn't serve the version: it still
	// converts objects to and from it.
	Unserved bool
	// Deprecated makes the API server warn of every request to the
	// version, with DeprecationWarning, or its own words when that is
	// empty. DeprecationWarning without Deprecated is a mistake.
	Deprecated         bool
	DeprecationWarning string
	// Unconverted says the version's schema is the storage version's, so
	// the API server converts it by changing apiVersion alone: a schema
	// that differs is a mistake.
	Unconverted bool
}

// CRD returns the CustomResourceDefinition of d: its names, the storage
// version, served unless Unserved, then each of Versions in its order, each
// with the status subresource, the scale subresource when it has a Scale,
// its columns and Age, and the schema of its Spec and Status under an
// object's apiVersion, kind and metadata; and,
// when d has Versions, its conversion: None when every one is Unconverted,
// else through Webhook. The API server, not the order, decides which
// version kubectl prefers: the highest by Kubernetes' version priority
// (v1 before v1beta1 before v1alpha1) among those served. It returns one
// error that names every mistake it finds in d, each with its place: a
// version's mistakes are prefixed with its place in Versions and its name.
func (d Definition) CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	errs := d.checkNames()
	hub, hubErrs := version(VersionDefinition{
		Name: d.Version, Spec: d.Spec, Status: d.Status, Rules: d.Rules, Columns: d.Columns, Scale: d.Scale,
		Unserved: d.Unserved, Deprecated: d.Deprecated, DeprecationWarning: d.DeprecationWarning,
	})
	errs = append(errs, hubErrs...)
	hub.Storage = true
	versions := []apiextensionsv1.CustomResourceDefinitionVersion{hub}
	named := map[string]string{d.Version: "the storage version"}
	converted := false
	for i, v := range d.Versions {
		label := fmt.Sprintf("Versions[%d] (%q)", i, v.Name)
		fail := func(err error) { errs = append(errs, fmt.Errorf("%s: %w", label, err)) }
		if v.Name == "" {
			fail(errors.New("the version's name is missing"))
		} else {
			if p := validation.IsDNS1035Label(v.Name); len(p) > 0 {
				fail(fmt.Errorf("the version's name %q: %s", v.Name, strings.Join(p, "; ")))
			}
			if prior, ok := named[v.Name]; ok {
				fail(fmt.Errorf("has the name of %s", prior))
			} else {
				named[v.Name] = fmt.Sprintf("Versions[%d]", i)
			}
		}
		cv, verrs := version(v)
		for _, err := range verrs {
			fail(err)
		}
		if v.Unconverted {
			if len(hubErrs) == 0 && len(verrs) == 0 && !reflect.DeepEqual(cv.Schema, hub.Schema) {
				fail(fmt.Errorf("is Unconverted, but its schema (of %s and %s) differs from the storage version's (of %s and %s): the API server would change apiVersion alone, so a version whose schema differs needs a conversion", v.Spec, v.Status, d.Spec, d.Status))
			}
		} else {
			converted = true
		}
		versions = append(versions, cv)
	}
	var conversion *apiextensionsv1.CustomResourceConversion
	switch {
	case converted && d.Webhook == nil:
		errs = append(errs, errors.New("the conversion webhook is missing: a version that isn't Unconverted converts through one"))
	case !converted && d.Webhook != nil:
		errs = append(errs, errors.New("the conversion webhook is set, but no version converts through one"))
	case converted:
		conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             d.Webhook.DeepCopy(),
				ConversionReviewVersions: []string{"v1"},
			},
		}
	case len(d.Versions) > 0:
		conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: d.Plural + "." + d.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: d.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural:     d.Plural,
				Singular:   strings.ToLower(d.Kind),
				Kind:       d.Kind,
				ListKind:   d.Kind + "List",
				ShortNames: slices.Clone(d.ShortNames),
				Categories: slices.Clone(d.Categories),
			},
			Scope:      d.Scope,
			Versions:   versions,
			Conversion: conversion,
		},
	}, nil
}

// version returns the CRD's version v, not stored, with its schema and
// columns, and every mistake in them.
func version(v VersionDefinition) (apiextensionsv1.CustomResourceDefinitionVersion, []error) {
	var errs []error
	var spec, status apiextensionsv1.JSONSchemaProps
	b := newBuilder(v.Rules)
	switch {
	case v.Spec == nil || v.Status == nil:
		errs = append(errs, errors.New("the Spec and Status types are missing"))
	default:
		spec = b.schema(v.Spec, "spec")
		status = b.schema(v.Status, "status")
		b.unused("spec or status")
	}
	var (
		columns []apiextensionsv1.CustomResourceColumnDefinition
		scale   *apiextensionsv1.CustomResourceSubresourceScale
	)
	if v.Spec != nil && v.Status != nil {
		schemas := map[string]*apiextensionsv1.JSONSchemaProps{"spec": &spec, "status": &status}
		columns = b.columns(v, schemas)
		if !v.Scale.IsZero() {
			scale = b.scale(v.Scale, []root{{"spec", v.Spec}, {"status", v.Status}}, schemas)
		}
	}
	errs = append(errs, b.errs...)
	if v.DeprecationWarning != "" && !v.Deprecated {
		errs = append(errs, fmt.Errorf("the DeprecationWarning %q is set, but the version isn't Deprecated", v.DeprecationWarning))
	}
	if len(errs) > 0 {
		return apiextensionsv1.CustomResourceDefinitionVersion{}, errs
	}

	// The schemas of one type share their subschemas: copying them
	// parts them, so a change to the CRD's schema changes one place only.
	spec, status = *spec.DeepCopy(), *status.DeepCopy()
	// A status the controller applies with no fields, after one with
	// some, gives up every field it owned, and the API server then stores
	// the status as null: the schema must take null, or every apply of the
	// emptied status fails, and retries forever.
	status.Nullable = true
	root := apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       spec,
			"status":     status,
		},
		Required: []string{"spec"},
	}
	out := apiextensionsv1.CustomResourceDefinitionVersion{
		Name:                     v.Name,
		Served:                   !v.Unserved,
		Deprecated:               v.Deprecated,
		Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &root},
		Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}, Scale: scale},
		AdditionalPrinterColumns: columns,
	}
	if v.DeprecationWarning != "" {
		w := v.DeprecationWarning
		out.DeprecationWarning = &w
	}
	return out, nil
}

// checkNames reports every missing or malformed name, and a bad Scope.
func (d Definition) checkNames() []error {
	var errs []error
	bad := func(field, value string, problems []string) {
		errs = append(errs, fmt.Errorf("%s %q: %s", field, value, strings.Join(problems, "; ")))
	}
	for _, n := range []struct {
		field, value string
		check        func(string) []string
	}{
		{"Group", d.Group, checkGroup},
		{"Version", d.Version, validation.IsDNS1035Label},
		{"Kind", d.Kind, func(k string) []string { return validation.IsDNS1035Label(strings.ToLower(k)) }},
		{"Plural", d.Plural, validation.IsDNS1035Label},
	} {
		if n.value == "" {
			errs = append(errs, fmt.Errorf("%s is missing", n.field))
			continue
		}
		if p := n.check(n.value); len(p) > 0 {
			bad(n.field, n.value, p)
		}
	}
	if d.Group != "" && d.Plural != "" {
		if p := validation.IsDNS1123Subdomain(d.Plural + "." + d.Group); len(p) > 0 {
			bad("the CRD's name", d.Plural+"."+d.Group, p)
		}
	}
	if d.Scope != apiextensionsv1.NamespaceScoped && d.Scope != apiextensionsv1.ClusterScoped {
		errs = append(errs, fmt.Errorf("the Scope %q is neither Namespaced nor Cluster", d.Scope))
	}
	for i, s := range d.ShortNames {
		if p := validation.IsDNS1035Label(s); len(p) > 0 {
			bad(fmt.Sprintf("ShortNames[%d]", i), s, p)
		}
	}
	for i, c := range d.Categories {
		if p := validation.IsDNS1035Label(c); len(p) > 0 {
			bad(fmt.Sprintf("Categories[%d]", i), c, p)
		}
	}
	return errs
}

// checkGroup reports what is wrong with an API group's name: the API
// server takes a DNS subdomain with at least one dot.
func checkGroup(g string) []string {
	p := validation.IsDNS1123Subdomain(g)
	if !strings.Contains(g, ".") {
		p = append(p, "must have a dot, as a domain such as example.com does")
	}
	return p
}
