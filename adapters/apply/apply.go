// Package apply makes a controller's own writes with server-side apply,
// through client-go's dynamic client: the status an object's reconcile
// returns, to the status subresource, and the controller's finalizer, as
// an apply of the object's metadata. It implements ports.Writer.
//
// Every apply names the object's uid. An apply that would create an object
// fails when its body names a uid, so the controller never recreates an
// object deleted since its cache saw it; and an apply of the metadata that
// names another object's uid fails as a change to an immutable field, so
// the finalizer never reaches another object created under the same name.
// The status subresource ignores the metadata it is sent, so a status
// apply is not held to the uid: one made just as its object is replaced
// lands on the new object, whose creation reconciles it, and its status is
// applied again.
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/ports"
)

// Config is the resource a Writer writes, and as whom.
type Config struct {
	// Client is the dynamic client the applies are sent through.
	Client dynamic.Interface
	// GVR names the resource.
	GVR schema.GroupVersionResource
	// Kind is the kind of the resource's objects, such as Memcached.
	Kind string
	// FieldManager is the field manager every apply is made under: the
	// controller's name.
	FieldManager string
}

// Writer applies the statuses and the finalizer of one resource's objects.
type Writer struct {
	c          Config
	apiVersion string
}

var _ ports.Writer = (*Writer)(nil)

// New returns a Writer of c. It fails, naming every mistake, when c has no
// Client, no Version or Resource in its GVR, no Kind or no FieldManager.
func New(c Config) (*Writer, error) {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("apply: Config.Client is nil"))
	}
	if c.GVR.Version == "" || c.GVR.Resource == "" {
		errs = append(errs, fmt.Errorf("apply: Config.GVR %q has no Version or no Resource", c.GVR))
	}
	if c.Kind == "" {
		errs = append(errs, errors.New("apply: Config.Kind is empty"))
	}
	if c.FieldManager == "" {
		errs = append(errs, errors.New("apply: Config.FieldManager is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Writer{c: c, apiVersion: c.GVR.GroupVersion().String()}, nil
}

// metadata is the metadata every apply sends: the object's name and uid,
// and the finalizers it applies, if any.
type metadata struct {
	Name       string    `json:"name"`
	Namespace  string    `json:"namespace,omitempty"`
	UID        types.UID `json:"uid"`
	Finalizers []string  `json:"finalizers,omitempty"`
}

// body is an apply's body: an object with only the fields the apply sets.
type body struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   metadata        `json:"metadata"`
	Status     json.RawMessage `json:"status,omitempty"`
}

func (w *Writer) body(key ports.Key, uid types.UID) body {
	return body{
		APIVersion: w.apiVersion,
		Kind:       w.c.Kind,
		Metadata:   metadata{Name: key.Name, Namespace: key.Namespace, UID: uid},
	}
}

// ApplyStatus applies status, a JSON object, to the status subresource of
// the object key and uid name, forcing, since the controller owns the
// status whole. It returns the API server's error, such as a Conflict when
// the object is gone.
func (w *Writer) ApplyStatus(ctx context.Context, key ports.Key, uid types.UID, status []byte) error {
	if !json.Valid(status) {
		return fmt.Errorf("the status %.40q is not JSON", status)
	}
	b := w.body(key, uid)
	b.Status = status
	return w.apply(ctx, key, b, true, "status")
}

// ApplyFinalizer applies the metadata of the object key and uid name with
// finalizer among its finalizers when present is true, and without it
// otherwise, which removes it unless another field manager set it too.
// Then the finalizer stays, and ApplyFinalizer returns a
// *ports.FinalizerHeldError naming the field managers that hold it.
//
// Removing the finalizer from an object that is gone succeeds: the
// finalizer went with it. That happens when a reconcile works from a
// cache that hasn't yet seen the deletion its previous removal let
// happen.
func (w *Writer) ApplyFinalizer(ctx context.Context, key ports.Key, uid types.UID, finalizer string, present bool) error {
	b := w.body(key, uid)
	if present {
		b.Metadata.Finalizers = []string{finalizer}
	}
	// Not forced: finalizers are a set, whose items two managers can share
	// without conflict, so a conflict is news worth failing on.
	u, err := w.send(ctx, key, b, false)
	if err != nil && !present && gone(err) {
		return nil
	}
	if err != nil || present {
		return err
	}
	if !slices.Contains(u.GetFinalizers(), finalizer) {
		return nil
	}
	return &ports.FinalizerHeldError{Finalizer: finalizer, Managers: holders(u.GetManagedFields(), finalizer, w.c.FieldManager)}
}

// gone reports whether err says the object an apply named is no longer
// there: not found, or a Conflict without field-manager conflicts, which
// is how the API server refuses an apply whose uid matches no object
// rather than create one.
func gone(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	if !apierrors.IsConflict(err) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict {
				return false
			}
		}
	}
	return true
}

func (w *Writer) apply(ctx context.Context, key ports.Key, b body, force bool, subresources ...string) error {
	_, err := w.send(ctx, key, b, force, subresources...)
	return err
}

func (w *Writer) send(ctx context.Context, key ports.Key, b body, force bool, subresources ...string) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return w.c.Client.Resource(w.c.GVR).Namespace(key.Namespace).Patch(ctx, key.Name, types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: w.c.FieldManager, Force: ptr.To(force)}, subresources...)
}

// holders returns the field managers other than self whose managed fields
// hold finalizer, in the order the object lists them.
func holders(entries []metav1.ManagedFieldsEntry, finalizer, self string) []string {
	// A set's item is keyed by its value's JSON: v:"example.com/finalizer".
	value, err := json.Marshal(finalizer)
	if err != nil {
		return nil
	}
	item := "v:" + string(value)
	var managers []string
	for _, e := range entries {
		if e.Manager == self || e.FieldsV1 == nil || slices.Contains(managers, e.Manager) {
			continue
		}
		var fields struct {
			Metadata struct {
				Finalizers map[string]json.RawMessage `json:"f:finalizers"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields.Metadata.Finalizers[item]; ok {
			managers = append(managers, e.Manager)
		}
	}
	return managers
}
