package ports

import (
	"context"
	"errors"
)

// The errors a storage migration's ports return, wrapped, for the domain
// to tell apart with errors.Is: the adapters translate the API server's
// status codes to them, so the domain needs no client library.
var (
	// ErrConflict is a write whose resourceVersion precondition failed:
	// the object changed since it was read.
	ErrConflict = errors.New("the object has changed since it was read")
	// ErrGone is an object, or a resource, that no longer exists.
	ErrGone = errors.New("not found")
	// ErrRefused is a write of one object that the API server refused
	// for that object alone: its validation, or an admission webhook or
	// policy that denied it. Writing other objects may still succeed.
	ErrRefused = errors.New("the API server refused the object")
)

// ContinueExpiredError is a list whose continue token is too old for a
// consistent list: Continue is the token the API server offered in its
// place, which continues after the same object at the latest version.
type ContinueExpiredError struct {
	// Continue is the fresh token; never empty.
	Continue string
	// Err is the API server's error.
	Err error
}

// Error says the token expired, with the API server's message.
func (e *ContinueExpiredError) Error() string {
	return "the continue token has expired: " + e.Err.Error()
}

// Unwrap returns the API server's error.
func (e *ContinueExpiredError) Unwrap() error { return e.Err }

// StoredObject is one object of a resource, as a list of it returned it:
// what a storage migration writes back unchanged.
type StoredObject struct {
	// Namespace and Name locate the object; Namespace is empty for a
	// cluster-scoped one.
	Namespace, Name string
	// Object is the object as read, resourceVersion included, so that
	// writing it back fails with ErrConflict once it has changed.
	Object map[string]any
}

// StoredPage is one page of a paged list of every object of a resource.
type StoredPage struct {
	// Objects are the page's objects.
	Objects []StoredObject
	// Continue is the token of the next page; empty on the last.
	Continue string
}

// StoredObjects is every object of one resource, in every namespace, read
// and written in the version its CRD stores.
type StoredObjects interface {
	// List returns the page after the one cont ended ("" for the first)
	// of at most limit objects. A cont too old for a consistent list
	// returns a *ContinueExpiredError carrying the token to go on with.
	List(ctx context.Context, cont string, limit int64) (StoredPage, error)
	// Get reads one object afresh: an error wrapping ErrGone when it no
	// longer exists.
	Get(ctx context.Context, namespace, name string) (StoredObject, error)
	// Rewrite writes obj back as it is, which the API server stores in
	// the resource's storage version: an error wrapping ErrConflict when
	// obj changed since it was read, ErrGone when it no longer exists.
	Rewrite(ctx context.Context, obj StoredObject) error
}

// StorageState is what a CRD says of its storage, as read.
type StorageState struct {
	// Name is the CRD's name, <plural>.<group>.
	Name string
	// Storage is the version spec.versions marks as stored.
	Storage string
	// StoredVersions is status.storedVersions: every version an object
	// may still be stored in.
	StoredVersions []string
	// Generation is metadata.generation, which every change to the spec,
	// and so to the storage version, moves.
	Generation int64
	// ResourceVersion is the CRD's, for a write that must fail with
	// ErrConflict if the CRD changed since.
	ResourceVersion string
	// Checkpoint is the progress of an earlier migration that did not
	// finish, as SaveCheckpoint wrote it; empty when there is none.
	Checkpoint string
}

// StorageDefinition is the CRD of the resource a storage migration
// rewrites.
type StorageDefinition interface {
	// Read reads the CRD: an error wrapping ErrGone when it doesn't
	// exist.
	Read(ctx context.Context) (StorageState, error)
	// SaveCheckpoint keeps checkpoint on the CRD, for a later run to
	// resume from; "" removes it.
	SaveCheckpoint(ctx context.Context, checkpoint string) error
	// SetStoredVersions sets status.storedVersions to versions, provided
	// the CRD is still at state.ResourceVersion: an error wrapping
	// ErrConflict when it isn't.
	SetStoredVersions(ctx context.Context, state StorageState, versions []string) error
}

// MigrationProgress is how far a storage migration has gone.
type MigrationProgress struct {
	// Resource is the CRD's name; Version the storage version objects are
	// rewritten to.
	Resource, Version string
	// Pages, Rewritten and Gone count the pages listed and the objects
	// rewritten or found deleted since the migration began, an earlier
	// run that this one resumes included. Conflicts counts the rewrites
	// retried after a conflict.
	Pages, Rewritten, Gone, Conflicts int
	// Last is the last object rewritten, as namespace/name.
	Last string
	// Resumed says the run went on from an earlier run's checkpoint.
	Resumed bool
}

// MigrationRecorder is where a storage migration reports its progress:
// the telemetry adapter turns each call into a log record.
type MigrationRecorder interface {
	// MigrationStarted reports a migration's start, from scratch or, with
	// p.Resumed, from a checkpoint.
	MigrationStarted(ctx context.Context, p MigrationProgress)
	// MigrationPage reports a page whose objects are all rewritten.
	MigrationPage(ctx context.Context, p MigrationProgress)
	// MigrationConflict reports a rewrite of obj that conflicted and is
	// retried on a fresh read: its attempt'th.
	MigrationConflict(ctx context.Context, p MigrationProgress, obj string, attempt int)
	// MigrationEnded reports the end of a run: err is nil when every
	// object was rewritten and storedVersions trimmed to p.Version.
	MigrationEnded(ctx context.Context, p MigrationProgress, storedVersions []string, err error)
}
