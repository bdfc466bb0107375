package migration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/loam-dev/loam/ports"
)

// maxExpired bounds the expired continue tokens a run replaces in a row:
// each replacement lists on from the same object, so more means an API
// server that never serves the page, and the run fails rather than spin.
const maxExpired = 3

// maxRefused bounds the refused objects a run goes on past: past it the
// others are likely refused for the same reason, and the run stops
// rather than try every one.
const maxRefused = 20

// Config is one migration: the ports it drives and its settings.
type Config struct {
	// Objects are the resource's objects; Definition its CRD.
	Objects    ports.StoredObjects
	Definition ports.StorageDefinition
	// Recorder receives the progress records.
	Recorder ports.MigrationRecorder
	// Version is the version the CRD must store; "" takes the one it does.
	Version string
	// PageSize is the objects a list asks for; 0 means DefaultPageSize.
	PageSize int64
	// ConflictRetries is how many times a rewrite is retried on a fresh
	// read after a conflict; 0 means DefaultConflictRetries.
	ConflictRetries int
}

// Result is how a migration ended: its counts, and the CRD's
// storedVersions at the end.
type Result struct {
	ports.MigrationProgress
	// StoredVersions is the CRD's status.storedVersions as the run left
	// it: the storage version alone when it succeeded.
	StoredVersions []string
}

// Run migrates every object of c's resource to the version its CRD
// stores, then trims the CRD's storedVersions to that version. It resumes
// from the checkpoint an interrupted run of the same storage version left
// on the CRD, and keeps its own after each page. An object deleted on the
// way is skipped; a rewrite that conflicts is retried on a fresh read, up
// to ConflictRetries times, and past them counts as written by whoever
// changed the object. It returns an error, naming the CRD and the
// object, when the CRD doesn't store c.Version, a list or a write fails,
// the API server refused objects (each named, after the others are
// rewritten), or the CRD's storage changed during the run, in which case
// storedVersions is left as it was; a run again then goes on from the
// last checkpoint. A CRD whose storedVersions
// is its storage version alone, with no checkpoint, needs nothing and
// returns at once.
func Run(ctx context.Context, c Config) (Result, error) {
	c.PageSize = cmp.Or(c.PageSize, DefaultPageSize)
	c.ConflictRetries = cmp.Or(c.ConflictRetries, DefaultConflictRetries)
	start, err := c.Definition.Read(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("reading the CRD: %w", err)
	}
	version, err := Target(start, c.Version)
	if err != nil {
		return Result{StoredVersions: start.StoredVersions}, err
	}
	r := &run{c: c, name: start.Name}
	if Done(start, version) {
		p := r.progress()
		c.Recorder.MigrationEnded(ctx, p, start.StoredVersions, nil)
		return Result{MigrationProgress: p, StoredVersions: start.StoredVersions}, nil
	}
	cp, resumed := resume(start, version)
	if !resumed {
		cp = checkpoint{Version: version, Generation: start.Generation}
	}
	r.cp, r.resumed = cp, resumed
	c.Recorder.MigrationStarted(ctx, r.progress())
	stored := start.StoredVersions
	if !r.cp.Listed {
		err = r.pages(ctx)
	}
	if err == nil {
		stored, err = r.trim(ctx, start, version)
	}
	if err != nil {
		err = fmt.Errorf("CRD %s: migrating to %s: %w", start.Name, version, err)
	}
	p := r.progress()
	c.Recorder.MigrationEnded(ctx, p, stored, err)
	return Result{MigrationProgress: p, StoredVersions: stored}, err
}

// run is one Run's state: its checkpoint, which counts what it did.
type run struct {
	c       Config
	name    string
	cp      checkpoint
	resumed bool
	// refused are the rewrites the API server refused for their object
	// alone, each naming it.
	refused []error
}

// progress returns the run's progress as its records report it.
func (r *run) progress() ports.MigrationProgress {
	return ports.MigrationProgress{
		Resource: r.name, Version: r.cp.Version,
		Pages: r.cp.Pages, Rewritten: r.cp.Rewritten, Gone: r.cp.Gone, Conflicts: r.cp.Conflicts,
		Last: r.cp.Last, Resumed: r.resumed,
	}
}

// pages lists every page from the checkpoint's on and rewrites its
// objects, keeping the checkpoint of the next page once a page is done,
// and the last page's as Listed. Once an object is refused the checkpoint
// stays where it was, so that no later run passes the object, and the
// run goes on only to name every refused object together.
func (r *run) pages(ctx context.Context) error {
	expired := 0
	for {
		page, err := r.c.Objects.List(ctx, r.cp.Continue, r.c.PageSize)
		if e, ok := errors.AsType[*ports.ContinueExpiredError](err); ok && expired < maxExpired {
			expired++
			r.cp.Continue = e.Continue
			continue
		}
		if err != nil {
			return errors.Join(append(r.refused, fmt.Errorf("listing the objects: %w", err))...)
		}
		expired = 0
		for _, obj := range page.Objects {
			if err := r.rewrite(ctx, obj); err != nil {
				return errors.Join(append(r.refused, err)...)
			}
			if len(r.refused) == maxRefused {
				return fmt.Errorf("%d objects refused, the run stopped there, each left in its old version: %w", maxRefused, errors.Join(r.refused...))
			}
		}
		if page.Continue == "" && len(r.refused) > 0 {
			return fmt.Errorf("%d objects refused, each left in its old version: %w", len(r.refused), errors.Join(r.refused...))
		}
		r.cp.Pages++
		r.cp.Continue, r.cp.Listed = page.Continue, page.Continue == ""
		if len(r.refused) == 0 {
			if err := r.save(ctx); err != nil {
				return err
			}
		}
		r.c.Recorder.MigrationPage(ctx, r.progress())
		if page.Continue == "" {
			return nil
		}
	}
}

// save keeps the checkpoint on the CRD; "" removes it once the trim is
// done.
func (r *run) save(ctx context.Context) error {
	saved, err := r.cp.encode()
	if err != nil {
		return err
	}
	if err := r.c.Definition.SaveCheckpoint(ctx, saved); err != nil {
		return fmt.Errorf("keeping the checkpoint: %w", err)
	}
	return nil
}

// rewrite writes obj back unchanged, retrying on a fresh read after a
// conflict, and skipping it once it is gone.
func (r *run) rewrite(ctx context.Context, obj ports.StoredObject) error {
	key := obj.Name
	if obj.Namespace != "" {
		key = obj.Namespace + "/" + obj.Name
	}
	for attempt := 1; ; attempt++ {
		err := r.c.Objects.Rewrite(ctx, obj)
		switch {
		case err == nil:
			r.cp.Rewritten++
			r.cp.Last = key
			return nil
		case gone(err):
			r.cp.Gone++
			return nil
		case errors.Is(err, ports.ErrRefused):
			r.refused = append(r.refused, fmt.Errorf("rewriting %s: %w", key, err))
			return nil
		case !errors.Is(err, ports.ErrConflict):
			return fmt.Errorf("rewriting %s: %w", key, err)
		}
		r.cp.Conflicts++
		r.c.Recorder.MigrationConflict(ctx, r.progress(), key, attempt)
		if attempt > r.c.ConflictRetries {
			// A conflict is a write made after the list the run read obj
			// from, and the CRD stored the version then: that write stored
			// obj in it, as kube-controller-manager's migrator reasons.
			return nil
		}
		obj, err = r.c.Objects.Get(ctx, obj.Namespace, obj.Name)
		if gone(err) {
			r.cp.Gone++
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s after a conflict: %w", key, err)
		}
	}
}

// trim sets the CRD's storedVersions to version alone, once Trim finds
// it safe, retrying on a fresh read when the CRD changed since it was
// read, and then removes the checkpoint. It returns the storedVersions
// the CRD has at the end.
func (r *run) trim(ctx context.Context, start ports.StorageState, version string) ([]string, error) {
	stored, err := r.setStored(ctx, start, version)
	if err != nil {
		return stored, err
	}
	if err := r.c.Definition.SaveCheckpoint(ctx, ""); err != nil {
		return stored, fmt.Errorf("removing the checkpoint: %w", err)
	}
	return stored, nil
}

// setStored sets the CRD's storedVersions to version alone, once Trim
// finds it safe, retrying on a fresh read after a conflict.
func (r *run) setStored(ctx context.Context, start ports.StorageState, version string) ([]string, error) {
	for attempt := 1; ; attempt++ {
		now, err := r.c.Definition.Read(ctx)
		if err != nil {
			return start.StoredVersions, fmt.Errorf("reading the CRD to trim storedVersions: %w", err)
		}
		to, err := Trim(start, now, version)
		if err != nil {
			return now.StoredVersions, err
		}
		if slices.Equal(now.StoredVersions, to) {
			return to, nil
		}
		err = r.c.Definition.SetStoredVersions(ctx, now, to)
		if err == nil {
			return to, nil
		}
		if !errors.Is(err, ports.ErrConflict) || attempt > r.c.ConflictRetries {
			return now.StoredVersions, fmt.Errorf("trimming storedVersions %v to %v: %w", now.StoredVersions, to, err)
		}
	}
}
