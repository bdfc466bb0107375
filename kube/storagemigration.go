package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	crdclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/client-go/dynamic"

	adapter "github.com/loam-dev/loam/adapters/migration"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/domain/migration"
	"github.com/loam-dev/loam/ports"
)

// Bounds and defaults of StorageMigrationSettings.
const (
	// DefaultStorageMigrationPageSize is the objects a page lists when
	// PageSize is 0.
	DefaultStorageMigrationPageSize = migration.DefaultPageSize
	// MaxStorageMigrationPageSize bounds PageSize.
	MaxStorageMigrationPageSize = migration.MaxPageSize
	// DefaultStorageMigrationConflictRetries is ConflictRetries' default.
	DefaultStorageMigrationConflictRetries = migration.DefaultConflictRetries
	// MaxStorageMigrationConflictRetries bounds ConflictRetries.
	MaxStorageMigrationConflictRetries = migration.MaxConflictRetries
	// DefaultStorageMigrationFieldManager names the migration's writes
	// when FieldManager is "".
	DefaultStorageMigrationFieldManager = "loam-storage-migration"
	// StorageMigrationCheckpoint is the CRD's annotation that keeps the
	// checkpoint of a migration that has not finished.
	StorageMigrationCheckpoint = adapter.CheckpointAnnotation
)

// StorageMigrationSettings tune a StorageMigration; the zero value is
// the defaults.
type StorageMigrationSettings struct {
	// PageSize is the objects each list asks for: 1 to
	// MaxStorageMigrationPageSize, 0 for 500.
	PageSize int64
	// ConflictRetries is how many times the rewrite of an object that
	// changed since its list is retried on a fresh read, before it counts
	// as written by its other writer: 1 to
	// MaxStorageMigrationConflictRetries, 0 for 5.
	ConflictRetries int
	// FieldManager names the migration's writes in managedFields: ""
	// for DefaultStorageMigrationFieldManager.
	FieldManager string
}

// StorageMigrationResult is how a StorageMigration's Run ended: its
// counts (pages, objects rewritten, objects found deleted, conflicts
// retried), and the CRD's status.storedVersions at the end.
type StorageMigrationResult = migration.Result

// StorageMigration moves every stored object of one resource to the
// version its CRD stores, and then trims the CRD's status.storedVersions
// to that version, so a later CRD can stop serving the old ones. See
// docs/kubernetes.md, "Moving storage to another version".
type StorageMigration struct {
	c migration.Config
}

// NewStorageMigration returns the migration of r's objects to r.Version,
// which must be the version r's CRD stores, through client, recording
// its progress through s's LoggerProvider. It reports every mistake
// together: a nil Setup or Client, a Resource without its Group, Version
// or Plural, and settings out of their bounds. It makes no request:
// Run does.
func NewStorageMigration[Spec, Status any](s *app.Setup, client *Client, r Resource[Spec, Status], settings StorageMigrationSettings) (*StorageMigration, error) {
	errs := storageMigrationMistakes(s, client, settings)
	for _, f := range [][2]string{{"Group", r.Group}, {"Version", r.Version}, {"Plural", r.Plural}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("kube: NewStorageMigration: the Resource's %s is empty", f[0]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	manager := cmp.Or(settings.FieldManager, DefaultStorageMigrationFieldManager)
	dyn, err := dynamic.NewForConfig(client.Config())
	if err != nil {
		return nil, fmt.Errorf("kube: NewStorageMigration: %w", err)
	}
	crds, err := crdclient.NewForConfig(client.Config())
	if err != nil {
		return nil, fmt.Errorf("kube: NewStorageMigration: %w", err)
	}
	logger := cmp.Or[log.LoggerProvider](s.Telemetry.LoggerProvider, lognoop.NewLoggerProvider()).Logger(ports.ScopeName)
	return &StorageMigration{c: migration.Config{
		Objects:         adapter.Objects{Client: dyn.Resource(r.GVR()), FieldManager: manager},
		Definition:      adapter.Definition{Client: crds.CustomResourceDefinitions(), Name: r.Plural + "." + r.Group, FieldManager: manager},
		Recorder:        adapter.Recorder{Logger: logger},
		Version:         r.Version,
		PageSize:        settings.PageSize,
		ConflictRetries: settings.ConflictRetries,
	}}, nil
}

// storageMigrationMistakes returns what is wrong with NewStorageMigration's
// arguments besides the Resource.
func storageMigrationMistakes(s *app.Setup, client *Client, settings StorageMigrationSettings) []error {
	var errs []error
	if s == nil {
		errs = append(errs, errors.New("kube: NewStorageMigration: the Setup is nil: pass the one Init is given"))
	}
	if client == nil {
		errs = append(errs, errors.New("kube: NewStorageMigration: the Client is nil"))
	}
	if settings.PageSize != 0 {
		if err := migration.CheckPageSize(settings.PageSize); err != nil {
			errs = append(errs, fmt.Errorf("kube: StorageMigrationSettings.PageSize: %w", err))
		}
	}
	if settings.ConflictRetries != 0 {
		if err := migration.CheckConflictRetries(settings.ConflictRetries); err != nil {
			errs = append(errs, fmt.Errorf("kube: StorageMigrationSettings.ConflictRetries: %w", err))
		}
	}
	if n := len(settings.FieldManager); n > metav1validation.FieldManagerMaxLength {
		errs = append(errs, fmt.Errorf("kube: StorageMigrationSettings.FieldManager: %d characters long: a field manager's name has at most %d", n, metav1validation.FieldManagerMaxLength))
	}
	return errs
}

// Run migrates: it lists every object of the resource, in every
// namespace, a page at a time, and writes each back unchanged, which the
// API server stores in the CRD's storage version; it keeps a checkpoint
// on the CRD (StorageMigrationCheckpoint) after each page, so a Run that
// is interrupted (ctx ends, a request fails) goes on from the last page
// it finished when run again; then it sets status.storedVersions to the
// storage version alone. An object deleted on the way is skipped; one
// that changed since its list is read again and rewritten, up to
// ConflictRetries times, and past them counts as written in the storage
// version by whoever changed it. It returns an error, with the result so
// far, when the CRD doesn't store the Resource's version, a request
// fails, the API server refuses objects (every one named, after the rest
// are rewritten), or the CRD's spec changed during the run; in each case
// storedVersions is left as it was. A CRD already trimmed, with no
// checkpoint, returns at once.
func (m *StorageMigration) Run(ctx context.Context) (StorageMigrationResult, error) {
	res, err := migration.Run(ctx, m.c)
	if err != nil {
		return res, fmt.Errorf("kube: StorageMigration: %w", err)
	}
	return res, nil
}
