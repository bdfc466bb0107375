// Package migration implements a storage migration's ports on client-go:
// the resource's objects through the dynamic client, its CRD through the
// apiextensions client, and the progress records through an
// OpenTelemetry Logger.
package migration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/ports"
)

// CheckpointAnnotation is the CRD's annotation that keeps the checkpoint
// of a migration that has not finished. Metadata changes leave a CRD's
// generation as it is, so keeping it doesn't look like a change of the
// storage.
const CheckpointAnnotation = "loam.dev/storage-migration"

// translate wraps err with the port's error it stands for: ErrConflict
// for a 409 Conflict, ErrGone for a 404.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %w", ports.ErrConflict, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", ports.ErrGone, err)
	}
	return err
}

// translateWrite translates an object's write as translate does, and
// wraps with ports.ErrRefused what the API server refused for that
// object alone: 422 Invalid (the schema, its CEL rules), and a denial by
// an admission webhook or policy, which answers with the status code it
// likes and says "denied" in a message of the API server's own.
func translateWrite(err error) error {
	var status apierrors.APIStatus
	if apierrors.IsInvalid(err) || (errors.As(err, &status) && denied(status.Status().Message)) {
		return fmt.Errorf("%w: %w", ports.ErrRefused, err)
	}
	return translate(err)
}

// denied reports whether message is an admission webhook's or policy's
// denial, in the words of k8s.io/apiserver's admission plugins.
func denied(message string) bool {
	return strings.Contains(message, " denied the request") || strings.Contains(message, " denied request")
}

// Objects is every object of one resource, through the dynamic client,
// in the version of its GroupVersionResource.
type Objects struct {
	// Client is the resource's, of the storage version.
	Client dynamic.NamespaceableResourceInterface
	// FieldManager names the rewrites in managedFields.
	FieldManager string
}

var _ ports.StoredObjects = Objects{}

// List returns one page of every namespace's objects. A 410 Gone with a
// fresh continue token, the API server's answer to an expired one,
// returns a *ports.ContinueExpiredError with that token.
func (o Objects) List(ctx context.Context, cont string, limit int64) (ports.StoredPage, error) {
	l, err := o.Client.List(ctx, metav1.ListOptions{Limit: limit, Continue: cont})
	if err != nil {
		var status apierrors.APIStatus
		if apierrors.IsResourceExpired(err) && errors.As(err, &status) && status.Status().Continue != "" {
			return ports.StoredPage{}, &ports.ContinueExpiredError{Continue: status.Status().Continue, Err: err}
		}
		return ports.StoredPage{}, translate(err)
	}
	page := ports.StoredPage{Continue: l.GetContinue(), Objects: make([]ports.StoredObject, 0, len(l.Items))}
	for _, u := range l.Items {
		page.Objects = append(page.Objects, stored(u))
	}
	return page, nil
}

// Get reads one object afresh.
func (o Objects) Get(ctx context.Context, namespace, name string) (ports.StoredObject, error) {
	u, err := o.Client.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ports.StoredObject{}, translate(err)
	}
	return stored(*u), nil
}

// Rewrite writes obj back with an update, whose resourceVersion makes it
// conflict once obj has changed; one the API server refuses for obj
// alone wraps ports.ErrRefused.
func (o Objects) Rewrite(ctx context.Context, obj ports.StoredObject) error {
	u := &unstructured.Unstructured{Object: obj.Object}
	_, err := o.Client.Namespace(obj.Namespace).Update(ctx, u, metav1.UpdateOptions{FieldManager: o.FieldManager})
	return translateWrite(err)
}

// stored returns u as the port carries it.
func stored(u unstructured.Unstructured) ports.StoredObject {
	return ports.StoredObject{Namespace: u.GetNamespace(), Name: u.GetName(), Object: u.Object}
}

// Definition is one CRD, through the apiextensions client.
type Definition struct {
	// Client is the CRDs'.
	Client crdclient.CustomResourceDefinitionInterface
	// Name is the CRD's, <plural>.<group>.
	Name string
	// FieldManager names the writes in managedFields.
	FieldManager string
}

var _ ports.StorageDefinition = Definition{}

// Read reads the CRD and finds its storage version.
func (d Definition) Read(ctx context.Context) (ports.StorageState, error) {
	crd, err := d.Client.Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return ports.StorageState{}, translate(err)
	}
	st := ports.StorageState{
		Name: crd.Name, StoredVersions: crd.Status.StoredVersions,
		Generation: crd.Generation, ResourceVersion: crd.ResourceVersion,
		Checkpoint: crd.Annotations[CheckpointAnnotation],
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			st.Storage = v.Name
		}
	}
	return st, nil
}

// SaveCheckpoint sets the CheckpointAnnotation with a merge patch, or
// removes it when checkpoint is "".
func (d Definition) SaveCheckpoint(ctx context.Context, checkpoint string) error {
	var value any
	if checkpoint != "" {
		value = checkpoint
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{CheckpointAnnotation: value}}})
	if err != nil {
		return fmt.Errorf("the checkpoint's patch: %w", err)
	}
	_, err = d.Client.Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: d.FieldManager})
	return translate(err)
}

// SetStoredVersions updates the CRD's status, at state's resourceVersion,
// with storedVersions set to versions.
func (d Definition) SetStoredVersions(ctx context.Context, state ports.StorageState, versions []string) error {
	crd, err := d.Client.Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		return translate(err)
	}
	if crd.ResourceVersion != state.ResourceVersion {
		return fmt.Errorf("%w: CRD %s is at resourceVersion %s, not %s", ports.ErrConflict, d.Name, crd.ResourceVersion, state.ResourceVersion)
	}
	crd.Status.StoredVersions = versions
	_, err = d.Client.UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: d.FieldManager})
	return translate(err)
}
