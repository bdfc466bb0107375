package migration

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/ports"
)

// The attributes of a migration's records.
const (
	// ResourceKey is the CRD's name.
	ResourceKey = attribute.Key("loam.kube.migration.resource")
	// VersionKey is the storage version objects are rewritten to.
	VersionKey = attribute.Key("loam.kube.migration.version")
	// PagesKey, RewrittenKey, GoneKey and ConflictsKey are the counts so
	// far, an earlier run's that this one resumed included.
	PagesKey     = attribute.Key("loam.kube.migration.pages")
	RewrittenKey = attribute.Key("loam.kube.migration.rewritten")
	GoneKey      = attribute.Key("loam.kube.migration.gone")
	ConflictsKey = attribute.Key("loam.kube.migration.conflicts")
	// LastKey is the last object rewritten, namespace/name.
	LastKey = attribute.Key("loam.kube.migration.last")
	// ResumedKey says the run went on from a checkpoint.
	ResumedKey = attribute.Key("loam.kube.migration.resumed")
	// ObjectKey is the object a conflict record is about; AttemptKey
	// the attempt that conflicted.
	ObjectKey  = attribute.Key("loam.kube.object.name")
	AttemptKey = attribute.Key("loam.kube.migration.attempt")
	// StoredVersionsKey is the CRD's status.storedVersions at the end.
	StoredVersionsKey = attribute.Key("loam.kube.migration.stored_versions")
)

// The bodies of a migration's records.
const (
	StartedBody  = "storage migration started"
	PageBody     = "storage migration rewrote a page"
	ConflictBody = "storage migration retries an object after a conflict"
	EndedBody    = "storage migration finished"
	FailedBody   = "storage migration failed"
)

// Recorder writes a migration's progress as log records.
type Recorder struct {
	// Logger is where the records go.
	Logger log.Logger
}

var _ ports.MigrationRecorder = Recorder{}

// MigrationStarted emits an INFO record, StartedBody.
func (r Recorder) MigrationStarted(ctx context.Context, p ports.MigrationProgress) {
	r.emit(ctx, log.SeverityInfo, StartedBody, p)
}

// MigrationPage emits an INFO record, PageBody.
func (r Recorder) MigrationPage(ctx context.Context, p ports.MigrationProgress) {
	r.emit(ctx, log.SeverityInfo, PageBody, p)
}

// MigrationConflict emits a WARN record, ConflictBody, naming obj.
func (r Recorder) MigrationConflict(ctx context.Context, p ports.MigrationProgress, obj string, attempt int) {
	r.emit(ctx, log.SeverityWarn, ConflictBody, p, ObjectKey.String(obj), AttemptKey.Int(attempt))
}

// MigrationEnded emits an INFO record, EndedBody, or an ERROR record,
// FailedBody, with the error as exception.message.
func (r Recorder) MigrationEnded(ctx context.Context, p ports.MigrationProgress, storedVersions []string, err error) {
	attrs := []attribute.KeyValue{StoredVersionsKey.StringSlice(storedVersions)}
	if err != nil {
		r.emit(ctx, log.SeverityError, FailedBody, p, append(attrs, attribute.String("exception.message", err.Error()))...)
		return
	}
	r.emit(ctx, log.SeverityInfo, EndedBody, p, attrs...)
}

// emit emits a record of severity with body, p's attributes and extra.
func (r Recorder) emit(ctx context.Context, severity log.Severity, body string, p ports.MigrationProgress, extra ...attribute.KeyValue) {
	var rec log.Record
	rec.SetTimestamp(time.Now())
	rec.SetSeverity(severity)
	rec.SetSeverityText(severity.String())
	rec.SetBody(attribute.StringValue(body))
	rec.AddAttributes(
		ResourceKey.String(p.Resource), VersionKey.String(p.Version),
		PagesKey.Int(p.Pages), RewrittenKey.Int(p.Rewritten),
		GoneKey.Int(p.Gone), ConflictsKey.Int(p.Conflicts),
		LastKey.String(p.Last), ResumedKey.Bool(p.Resumed),
	)
	rec.AddAttributes(extra...)
	r.Logger.Emit(ctx, rec)
}
