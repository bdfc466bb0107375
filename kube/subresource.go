package kube

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/loam-dev/loam/domain/webhookconfig"
)

// SubResource names a subresource whose requests carry an object of
// another kind than its resource's, decoded into T: a Deployment's scale
// carries an autoscaling/v1 Scale, a Pod's exec a v1 PodExecOptions. Its
// Hooks are ValidateSubResource and MutateSubResource; a subresource whose
// requests carry the resource's own object, such as status, is admitted
// by the resource's Hook with the option SubResources.
type SubResource[T any] struct {
	// GVR names the resource, such as
	// appsv1.SchemeGroupVersion.WithResource("deployments").
	GVR schema.GroupVersionResource
	// Name names the subresource, such as scale or exec.
	Name string
	// Kind is the kind of the requests' object as the reviews name it,
	// such as autoscalingv1.SchemeGroupVersion.WithKind("Scale") or
	// corev1.SchemeGroupVersion.WithKind("PodExecOptions").
	Kind schema.GroupVersionKind
	// Scope is the resource's: Namespaced or Cluster.
	Scope Scope
}

// ValidateSubResource is Validate for the requests to the subresource s,
// with their object decoded into T, such as a Deployment's scale
// (Operations(Update), the default Create and Update being harmless) or a
// Pod's exec, which takes Operations(Connect): a CONNECT is made to a
// subresource alone, and only such a Hook may take it. The webhook is
// served at /validate/<group>/<version>/<plural>/<subresource>.
func ValidateSubResource[T any](s SubResource[T], f func(ctx context.Context, a Admission[T]) ([]string, error), opts ...HookOption) Hook {
	return validating(subResourceHook(webhookconfig.Validate, s, opts), "ValidateSubResource", s.gvk(), f)
}

// MutateSubResource is Mutate for the requests to the subresource s, with
// their object decoded into T, such as a Deployment's scale, whose
// replicas f may change. It takes no Connect, as no Mutate does. The
// webhook is served at /mutate/<group>/<version>/<plural>/<subresource>.
func MutateSubResource[T any](s SubResource[T], f func(ctx context.Context, a Admission[T], obj *T) ([]string, error), opts ...HookOption) Hook {
	return mutating(subResourceHook(webhookconfig.Mutate, s, opts), "MutateSubResource", s.gvk(), f)
}

// subResourceHook returns the Hook of type typ for the requests to s,
// with s's mistakes. It is a Kind's Hook, leaving the App's namespace out,
// unless its resource is one of the App's own, which a Resource's Hook
// with SubResources admits.
func subResourceHook[T any](typ webhookconfig.Type, s SubResource[T], opts []HookOption) Hook {
	h := Hook{cfg: webhookconfig.Hook{
		Type: typ, Group: s.GVR.Group, Version: s.GVR.Version, Plural: s.GVR.Resource, SubResource: s.Name,
		Kind: s.Kind.Kind, Scope: string(s.Scope), Options: options(opts), OfKind: true,
	}}
	for _, err := range s.mistakes() {
		h.cfg.Mistakes = append(h.cfg.Mistakes, fmt.Errorf("SubResource %s: %w", s.name(), err))
	}
	h.named = s.name()
	return h
}

// gvk is the kind of the requests' object, as a review names it.
func (s SubResource[T]) gvk() groupVersionKind {
	return groupVersionKind{s.Kind.Group, s.Kind.Version, s.Kind.Kind}
}

// name names s for errors, such as deployments/scale.v1.apps.
func (s SubResource[T]) name() string {
	group := s.GVR.Group
	if group == "" {
		group = "core"
	}
	return s.GVR.Resource + "/" + s.Name + "." + s.GVR.Version + "." + group
}

// mistakes returns an error for each mistake in s: a GVR without a
// Version or a Resource, a missing or malformed Name, a Kind without a
// Version or a Kind, and a Scope that is neither Namespaced nor Cluster.
func (s SubResource[T]) mistakes() []error {
	errs := gvrMistakes(s.GVR)
	if s.Name == "" {
		errs = append(errs, errors.New("the Name is missing: name the subresource, such as scale"))
	} else if p := validation.IsDNS1123Label(s.Name); len(p) > 0 {
		errs = append(errs, fmt.Errorf("the Name %q is no subresource's name: %v", s.Name, p))
	}
	if s.Kind.Version == "" || s.Kind.Kind == "" {
		errs = append(errs, fmt.Errorf("the Kind %q has no Version or no Kind: name the kind of the requests' object, such as autoscaling/v1 Scale", s.Kind))
	}
	return append(errs, s.Scope.mistakes()...)
}
