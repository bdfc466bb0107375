// Package conversion converts a custom resource's objects between its
// versions through its hub, the version the API server stores, as a
// conversion webhook does (issue #21), and holds the API server's rule for
// what a conversion may change in an object's metadata. It works on JSON
// and on erased functions over it: kube adapts the end user's typed Spoke
// functions to a Spoke's ToHub and FromHub.
package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/domain/webhook"
)

// Func converts obj, an object as JSON, to another version, whose
// apiVersion and kind are to's, and returns it as JSON.
type Func func(obj []byte, to metav1.TypeMeta) ([]byte, error)

// Spoke is one version of a Hub other than the hub's own: how its objects
// convert to the hub's version and from it.
type Spoke struct {
	ToHub, FromHub Func
}

// Hub converts the objects of a resource between its versions through the
// hub. Its zero value has no version to convert to; fill every field.
type Hub struct {
	// Group and Kind are the resource's; Version is the hub's version.
	Group, Kind, Version string
	// Spokes are the resource's other versions, by name.
	Spokes map[string]Spoke
}

// Convert returns obj, an object of the resource in any of its versions as
// JSON, converted to apiVersion, such as cache.example.com/v1alpha1: a
// spoke's object up to the hub with its ToHub, and then down to the
// version asked for with that version's FromHub; an object already of
// apiVersion unchanged. It fails when ctx has ended, and, naming the
// object by its namespace and name, when obj is not a JSON object of the
// Kind in one of the versions, when apiVersion is not one of them, and
// when a Spoke's function fails.
func (h Hub) Convert(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("converting a %s: %w", h.Kind, context.Cause(ctx))
	}
	var head webhook.ObjectHeader
	if err := json.Unmarshal(obj, &head); err != nil {
		return nil, fmt.Errorf("converting a %s: the object is not a JSON object with a kind and metadata: %w", h.Kind, err)
	}
	name := head.Metadata.Name
	if head.Metadata.Namespace != "" {
		name = head.Metadata.Namespace + "/" + name
	}
	fail := func(err error) error {
		return fmt.Errorf("converting the %s %q from %q to %q: %w", h.Kind, name, head.APIVersion, apiVersion, err)
	}
	from, to, err := h.route(head, apiVersion)
	if err != nil {
		return nil, fail(err)
	}
	out, err := h.via(obj, from, to, apiVersion)
	if err != nil {
		return nil, fail(err)
	}
	return out, nil
}

// route returns the versions an object with head converts from and to,
// or every reason it can't be converted to apiVersion.
func (h Hub) route(head webhook.ObjectHeader, apiVersion string) (from, to string, err error) {
	var errs []error
	if head.Kind != h.Kind {
		errs = append(errs, fmt.Errorf("its kind %q is not %q", head.Kind, h.Kind))
	}
	from, err = h.version("its apiVersion", head.APIVersion)
	if err != nil {
		errs = append(errs, err)
	}
	to, err = h.version("the apiVersion asked for", apiVersion)
	if err != nil {
		errs = append(errs, err)
	}
	return from, to, errors.Join(errs...)
}

// via converts obj from the version from to the version to, whose
// apiVersion is apiVersion, through the hub.
func (h Hub) via(obj []byte, from, to, apiVersion string) ([]byte, error) {
	if from == to {
		return obj, nil
	}
	hub := obj
	if from != h.Version {
		var err error
		hub, err = h.Spokes[from].ToHub(obj, metav1.TypeMeta{APIVersion: h.Group + "/" + h.Version, Kind: h.Kind})
		if err != nil {
			return nil, err
		}
	}
	if to == h.Version {
		return hub, nil
	}
	return h.Spokes[to].FromHub(hub, metav1.TypeMeta{APIVersion: apiVersion, Kind: h.Kind})
}

// version returns the version apiVersion names, one of the resource's, or
// an error naming what, such as "its apiVersion".
func (h Hub) version(what, apiVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s %q: %w", what, apiVersion, err)
	case gv.Group != h.Group:
		return "", fmt.Errorf("%s %q is not of the group %s", what, apiVersion, h.Group)
	}
	if _, ok := h.Spokes[gv.Version]; !ok && gv.Version != h.Version {
		return "", fmt.Errorf("%s %q is not a version of the %s", what, apiVersion, h.Kind)
	}
	return gv.Version, nil
}
