package kube

import "github.com/loam-dev/loam/domain/crd"

// ScaleSubresource is a Resource's scale subresource, /scale, which
// kubectl scale and a HorizontalPodAutoscaler read and write as an
// autoscaling/v1 Scale: the Scale's spec.replicas is a field of the
// resource's spec, its status.replicas and status.selector are fields of
// its status (the selector may be in the spec). Scale makes one; the zero
// ScaleSubresource is none. Its method Selector names the selector's
// field.
type ScaleSubresource = crd.ScaleSubresource

// Replicas is the Go type of a replica count that the scale subresource
// reads and writes: an int32 or an int64, or a pointer to one. The API
// server reads either as a number, and writes at most an int32's worth.
type Replicas = crd.Replicas

// Scale is a scale subresource whose spec.replicas is the field spec
// points to, such as &spec.Replicas, and whose status.replicas is the
// field status points to, such as &status.Replicas: fields of the values
// given to the Rules of the Resource's Spec and Status, or of structs they
// nest, as a Column's are. kubectl scale and an autoscaler set spec's
// field through the API server, which changes the object's spec, and so
// reconciles it; the Reconciler reports status's. Selector adds the label
// selector of the pods the replicas are, which an autoscaler needs:
//
//	Scale: kube.Scale(&spec.Replicas, &status.Replicas).Selector(&status.Selector),
//
// A field of another type than an integer doesn't compile. CRD reports
// the mistakes that do, with every other: a nil pointer, a field of
// neither value, spec's field in the status or status's in the spec, a
// field whose schema isn't an integer (or, for the selector, a string),
// such as one with the json string option, one that may be null, a spec
// replicas field that may be missing (optional, or in an optional struct,
// with no Default), on which the API server fails every GET of the scale,
// and a field whose JSON name has a dot, which the API server's path
// can't name.
func Scale[Spec, Status Replicas](spec *Spec, status *Status) ScaleSubresource {
	return crd.Scale(spec, status)
}
