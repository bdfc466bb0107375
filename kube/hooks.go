package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/loam-dev/loam/domain/webhookconfig"
	"github.com/loam-dev/loam/ports"
)

// Hook is one webhook of an App: what it admits or converts, the path it
// is served at, and its handler. Validate, Mutate, ValidateKind,
// MutateKind and Conversion make Hooks; NewWebhooks serves them, and
// WebhookConfigurations writes the configurations that tell the API
// server to call them. The zero Hook is a mistake.
type Hook struct {
	// cfg is what the Hook admits or converts, its options and the
	// mistakes of what it was made of, as domain/webhookconfig reads them.
	cfg webhookconfig.Hook
	// admitter is a Validate's or a Mutate's, and converter a
	// Conversion's, which returns the hub's mistakes instead.
	admitter  ports.Admitter
	converter func() (ports.Converter, error)
	// named names the Resource or the Kind when its names are missing.
	named string
}

// Validate serves a validating webhook for r's objects: f decides each
// admission request, and an error denies it, with the error's message as
// kubectl prints it; the warnings are returned either way. An error that
// is a Kubernetes APIStatus, such as apierrors.NewForbidden's, keeps its
// code and reason; any other is denied with 403 Forbidden.
//
// The webhook is served at /validate/<group>/<version>/<plural>. opts set
// its failure policy, operations (Create and Update unless Operations
// says others), timeout and selectors. NewWebhooks and
// WebhookConfigurations report a nil f and a mistake in r or in opts.
func Validate[Spec, Status any](r Resource[Spec, Status], f func(ctx context.Context, a Admission[Object[Spec, Status]]) (warnings []string, err error), opts ...HookOption) Hook {
	h := resourceHook(webhookconfig.Validate, r, opts)
	return validating(h, "Validate", h.gvk(), f)
}

// Mutate serves a mutating webhook for r's objects, such as one that
// defaults what a schema default can't: f changes obj, a decoded copy of
// the request's Object, and the API server stores what f left, as the
// JSON patch of f's changes that the webhook answers with. An error
// denies the request, as Validate's does, and drops f's changes.
//
// The webhook is served at /mutate/<group>/<version>/<plural>, and opts
// are Validate's; a Mutate may not take Delete or Connect, whose requests
// have no object to change.
func Mutate[Spec, Status any](r Resource[Spec, Status], f func(ctx context.Context, a Admission[Object[Spec, Status]], obj *Object[Spec, Status]) (warnings []string, err error), opts ...HookOption) Hook {
	h := resourceHook(webhookconfig.Mutate, r, opts)
	return mutating(h, "Mutate", h.gvk(), f)
}

// ValidateKind is Validate for the objects of k, one of Kubernetes' own
// kinds or another's, decoded into T. The core group's webhook is served
// at /validate/core/<version>/<plural>.
func ValidateKind[T any](k Kind[T], f func(ctx context.Context, a Admission[T]) ([]string, error), opts ...HookOption) Hook {
	h := kindHook(webhookconfig.Validate, k, opts)
	return validating(h, "ValidateKind", h.gvk(), f)
}

// MutateKind is Mutate for the objects of k, decoded into T. The core
// group's webhook is served at /mutate/core/<version>/<plural>.
func MutateKind[T any](k Kind[T], f func(ctx context.Context, a Admission[T], obj *T) ([]string, error), opts ...HookOption) Hook {
	h := kindHook(webhookconfig.Mutate, k, opts)
	return mutating(h, "MutateKind", h.gvk(), f)
}

// Conversion serves the conversion webhook of hub, a Resource with
// Versions: the API server calls it to convert hub's objects between any
// two of their versions, through hub, at the path the CRD's conversion
// stanza names, /convert/<group>/<plural>. NewWebhooks reports every
// mistake hub's CRD would. WebhookConfigurations writes nothing for it:
// the CRD carries it.
func Conversion[Spec, Status any](hub Resource[Spec, Status]) Hook {
	h := resourceHook(webhookconfig.Conversion, hub, nil)
	h.cfg.Desc = fmt.Sprintf("Conversion(%s)", hub.name())
	h.converter = hub.converter
	return h
}

// validating returns h admitting with f the objects of the kind gvk,
// described as the end user wrote it with the function named fn, such as
// Validate(memcacheds.v1alpha1.cache.example.com), or h with the mistake
// of a nil f.
func validating[T any](h Hook, fn string, gvk groupVersionKind, f func(context.Context, Admission[T]) ([]string, error)) Hook {
	h.cfg.Desc = fmt.Sprintf("%s(%s)", fn, h.name())
	if f == nil {
		h.cfg.Mistakes = append(h.cfg.Mistakes, errNilFunction)
		return h
	}
	h.admitter = validator[T]{gvk: gvk, f: f}
	return h
}

// mutating is validating for a Mutate's f.
func mutating[T any](h Hook, fn string, gvk groupVersionKind, f func(context.Context, Admission[T], *T) ([]string, error)) Hook {
	h.cfg.Desc = fmt.Sprintf("%s(%s)", fn, h.name())
	if f == nil {
		h.cfg.Mistakes = append(h.cfg.Mistakes, errNilFunction)
		return h
	}
	h.admitter = mutator[T]{gvk: gvk, f: f}
	return h
}

// errNilFunction is the mistake of a Hook made with a nil function.
var errNilFunction = errors.New("the function is nil")

// resourceHook returns the Hook of type typ for r's objects, with r's
// mistakes.
func resourceHook[Spec, Status any](typ webhookconfig.Type, r Resource[Spec, Status], opts []HookOption) Hook {
	h := Hook{cfg: webhookconfig.Hook{
		Type: typ, Group: r.Group, Version: r.Version, Plural: r.Plural, Kind: r.Kind, Scope: string(r.Scope), Options: options(opts),
	}}
	for _, err := range r.controllerMistakes() {
		h.cfg.Mistakes = append(h.cfg.Mistakes, fmt.Errorf("Resource %s: %w", r.name(), err))
	}
	h.named = r.name()
	return h
}

// kindHook returns the Hook of type typ for k's objects, with k's
// mistakes.
func kindHook[T any](typ webhookconfig.Type, k Kind[T], opts []HookOption) Hook {
	h := Hook{cfg: webhookconfig.Hook{
		Type: typ, Group: k.GVR.Group, Version: k.GVR.Version, Plural: k.GVR.Resource, Kind: k.Kind, Scope: string(k.Scope), Options: options(opts),
		OfKind: true,
	}}
	for _, err := range k.mistakes() {
		h.cfg.Mistakes = append(h.cfg.Mistakes, fmt.Errorf("Kind %s: %w", k.name(), err))
	}
	h.named = k.name()
	return h
}

// name names what h admits, such as memcacheds.v1alpha1.cache.example.com,
// or by its Resource's or Kind's name when a name is missing.
func (h Hook) name() string {
	if h.cfg.Plural == "" || h.cfg.Version == "" {
		return h.named
	}
	plural := h.cfg.Plural
	if h.cfg.SubResource != "" {
		plural += "/" + h.cfg.SubResource
	}
	return plural + "." + h.cfg.Version + "." + h.cfg.GroupName()
}

// gvk is what h admits, as a review names it.
func (h Hook) gvk() groupVersionKind {
	return groupVersionKind{h.cfg.Group, h.cfg.Version, h.cfg.Kind}
}

// String describes the Hook as the end user wrote it, for errors.
func (h Hook) String() string { return h.cfg.String() }

// Path returns the path the Hook is served at, such as
// /validate/cache.example.com/v1alpha1/memcacheds, or "" for the zero
// Hook.
func (h Hook) Path() string { return h.cfg.Path() }

// convert returns a Conversion's Converter, or its hub's mistakes.
func (h Hook) convert() (ports.Converter, error) {
	if h.converter == nil {
		return nil, nil
	}
	return h.converter()
}

// configs returns what domain/webhookconfig reads of hooks.
func configs(hooks []Hook) []webhookconfig.Hook {
	cfgs := make([]webhookconfig.Hook, len(hooks))
	for i, h := range hooks {
		cfgs[i] = h.cfg
	}
	return cfgs
}
