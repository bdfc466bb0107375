package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/conversion"
	"github.com/loam-dev/loam/ports"
)

// converter is the domain's conversion.Hub of a Resource, naming kube in
// its errors.
type converter struct{ hub conversion.Hub }

// converter returns the Converter of r's versions, which the hook
// Conversion serves, or every mistake CRD would report in r: a
// conversion of a CRD the API server would refuse is no conversion.
func (r Resource[Spec, Status]) converter() (ports.Converter, error) {
	if _, err := r.CRD(); err != nil {
		return nil, err
	}
	hub := conversion.Hub{Group: r.Group, Kind: r.Kind, Version: r.Version, Spokes: make(map[string]conversion.Spoke, len(r.Versions))}
	for _, v := range r.Versions {
		hub.Spokes[v.res.version] = conversion.Spoke{ToHub: v.toHub, FromHub: v.fromHub}
	}
	return converter{hub: hub}, nil
}

// Convert returns obj, an object of r in any of its versions as JSON,
// converted to apiVersion, such as cache.example.com/v1alpha1, as the
// conversion webhook does: a Spoke's object up to r, the hub, and then
// down to the version asked for; an object already of apiVersion
// unchanged. It is for tests, such as package conversiontest's: it checks
// r as CRD does, on every call, and returns CRD's mistakes when there are
// any. It fails, naming the object by its namespace and name, when obj is
// not a JSON object of r's Kind in one of r's versions, when apiVersion is
// not one of them, and when a Spoke's function fails or changes metadata
// a conversion may not.
func (r Resource[Spec, Status]) Convert(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
	c, err := r.converter()
	if err != nil {
		return nil, err
	}
	return c.Convert(ctx, obj, apiVersion)
}

// Convert converts obj to apiVersion through the hub; see Resource.Convert.
func (c converter) Convert(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
	out, err := c.hub.Convert(ctx, obj, apiVersion)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return out, nil
}

// convertTyped decodes obj as an Object[FS, FSt], converts it with f to an
// Object[TS, TSt] whose TypeMeta is to and whose ObjectMeta starts as a
// copy of obj's, and encodes the result. It fails when f does, and when f
// changed what conversion.Check says a conversion may not, naming each
// such field.
func convertTyped[FS, FSt, TS, TSt any](obj []byte, to metav1.TypeMeta, f func(Object[FS, FSt], *Object[TS, TSt]) error) ([]byte, error) {
	var from Object[FS, FSt]
	if err := json.Unmarshal(obj, &from); err != nil {
		return nil, fmt.Errorf("decoding it as %s: %w", reflect.TypeFor[Object[FS, FSt]](), err)
	}
	// want is the metadata f must leave as it is; from and out get copies
	// of their own, so that f changing one changes neither want nor the
	// other.
	want := from.ObjectMeta.DeepCopy()                                            //nolint:staticcheck // the metadata, not the object
	out := Object[TS, TSt]{TypeMeta: to, ObjectMeta: *from.ObjectMeta.DeepCopy()} //nolint:staticcheck // the metadata, not the object
	if err := f(from, &out); err != nil {
		return nil, err
	}
	if err := conversion.Check(to, out.TypeMeta, *want, out.ObjectMeta); err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// setAPIVersion is Unconverted's conversion: conversion.SetAPIVersion.
func setAPIVersion(obj []byte, to metav1.TypeMeta) ([]byte, error) {
	return conversion.SetAPIVersion(obj, to)
}
