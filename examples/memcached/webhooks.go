package memcached

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/loam-dev/loam/kube"
)

// Images is the operator's policy on the images a Memcached may run,
// which its webhooks enforce: the admission of a v1beta1 Memcached, and,
// converted to v1beta1 by the API server, of a v1alpha1 one.
type Images struct {
	// Allowed are the prefixes an image must start with, such as
	// memcached: or registry.example.com/cache/memcached:. Empty allows
	// every image.
	Allowed []string
	// DefaultImage is the image of a Memcached that names none.
	DefaultImage string
}

// DefaultImage is the image a Memcached names none runs, unless the
// operator's MEMCACHED_DEFAULT_IMAGE says another: v1alpha1's schema
// default, so both versions default alike.
const DefaultImage = "memcached:1.6.26-alpine3.19"

// Check reports every mistake in i at once, joined: an empty
// DefaultImage, one that is no image reference v1beta1's schema accepts,
// an empty prefix among Allowed, and a DefaultImage that the Allowed
// prefixes refuse. Any of them would have the webhooks refuse every
// Memcached that names no image, so Init refuses them instead.
func (i Images) Check() error {
	var errs []error
	switch {
	case i.DefaultImage == "":
		errs = append(errs, errors.New("the default image is empty: set one, such as "+DefaultImage))
	case !imageReference.MatchString(i.DefaultImage):
		errs = append(errs, fmt.Errorf("the default image %q is not an image reference, such as %s", i.DefaultImage, DefaultImage))
	}
	for n, p := range i.Allowed {
		if p == "" {
			errs = append(errs, fmt.Errorf("the allowed prefix [%d] is empty", n))
		}
	}
	if i.DefaultImage != "" && !i.allows(i.DefaultImage) {
		errs = append(errs, fmt.Errorf("the default image %q starts with none of the allowed prefixes %q", i.DefaultImage, i.Allowed))
	}
	return errors.Join(errs...)
}

// allows reports whether image starts with one of the Allowed prefixes.
func (i Images) allows(image string) bool {
	return len(i.Allowed) == 0 || slices.ContainsFunc(i.Allowed, func(p string) bool { return strings.HasPrefix(image, p) })
}

// Validate is the validating webhook's function: it denies a Memcached
// whose image the policy doesn't allow, naming the image and what is
// allowed. An update that keeps an image the policy has stopped allowing
// since is admitted, with a warning, so a policy change never blocks a
// Memcached's other changes, or its deletion.
func (i Images) Validate(_ context.Context, a kube.Admission[ObjectV1beta1]) ([]string, error) {
	image := a.Object.Spec.Image
	if i.allows(image) {
		return nil, nil
	}
	if a.Operation == kube.Update && a.OldObject.Spec.Image == image {
		return []string{fmt.Sprintf("the image %q is no longer allowed (allowed: %s): change it", image, strings.Join(i.Allowed, ", "))}, nil
	}
	return nil, fmt.Errorf("the image %q is not allowed: an image must start with one of %s", image, strings.Join(i.Allowed, ", "))
}

// Default is the defaulting webhook's function: a Memcached that names no
// image gets the operator's default image, which a schema default
// couldn't give, since it is the operator's setting, not the CRD's.
func (i Images) Default(_ context.Context, _ kube.Admission[ObjectV1beta1], m *ObjectV1beta1) ([]string, error) {
	if m.Spec.Image == "" {
		m.Spec.Image = i.DefaultImage
	}
	return nil, nil
}

// Hooks are the operator's webhooks: the conversion of Memcacheds between
// v1alpha1 and v1beta1, the defaulting of their image, and its
// validation, in that order, as the API server calls them (mutating
// before validating). WebhookConfigurations writes deploy/webhooks.yaml
// from them, which TestWebhookConfigurations keeps true.
//
// Of the configurations' options, the hooks set two, each the default,
// to say they are meant: sideEffects None, since neither hook writes
// anything anywhere, so a dry run (kubectl apply --dry-run=server) is
// admitted by them like any request; and matchPolicy Equivalent, since a
// v1alpha1 Memcached is admitted by these v1beta1 hooks, converted, and
// Exact would let every v1alpha1 write past the image policy. The rest
// keep their defaults: reinvocationPolicy Never, since Default only
// fills an empty image and no other webhook of ours changes a Memcached
// after it; no matchConditions, since every write of a spec is the
// policy's, the operator's own finalizer updates too (they keep the
// image, which Validate admits); no SubResources, since only the
// controller writes status, which holds no image; failurePolicy Fail,
// since an image the policy never saw must not run; timeoutSeconds 10.
func Hooks(images Images) []kube.Hook {
	opts := []kube.HookOption{kube.SideEffects(kube.SideEffectsNone), kube.MatchPolicy(kube.Equivalent)}
	return []kube.Hook{
		kube.Conversion(MemcachedV1beta1),
		kube.Mutate(MemcachedV1beta1, images.Default, opts...),
		kube.Validate(MemcachedV1beta1, images.Validate, opts...),
	}
}
