// Package migration moves the objects of a custom resource to the version
// its CRD stores, and then trims the CRD's status.storedVersions to that
// version: kube-storage-version-migrator's loop, run by an operator. It
// decides; the ports read and write.
//
// A migration lists every object in pages, writes each back unchanged
// (the API server encodes it in the storage version as it stores it),
// keeps a checkpoint on the CRD after each page so an interrupted run
// goes on where it stopped, and trims storedVersions only when the CRD
// stored one version, unchanged, from the migration's start to its end.
package migration

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/loam-dev/loam/ports"
)

// Bounds and defaults of a migration's settings.
const (
	// DefaultPageSize is the objects a list asks for, as
	// kube-storage-version-migrator's chunk.
	DefaultPageSize = 500
	// MaxPageSize bounds a page: past it one list response holds more
	// objects than an API server serves well in one body.
	MaxPageSize = 10000
	// DefaultConflictRetries is how many times an object's rewrite is
	// retried on a fresh read after a conflict.
	DefaultConflictRetries = 5
	// MaxConflictRetries bounds ConflictRetries: an object that changes
	// faster than this many reads is written by someone else, in the
	// storage version already, and counts as done.
	MaxConflictRetries = 100
)

// CheckPageSize reports whether n can be a migration's page size: 1 to
// MaxPageSize; 0 means DefaultPageSize and is checked by the caller.
func CheckPageSize(n int64) error {
	if n < 1 || n > MaxPageSize {
		return fmt.Errorf("%d is out of range: want 1 to %d objects a page (0 for %d)", n, MaxPageSize, DefaultPageSize)
	}
	return nil
}

// CheckConflictRetries reports whether n can be a migration's retries
// after a conflict: 1 to MaxConflictRetries; 0 means
// DefaultConflictRetries and is checked by the caller.
func CheckConflictRetries(n int) error {
	if n < 1 || n > MaxConflictRetries {
		return fmt.Errorf("%d is out of range: want 1 to %d retries (0 for %d)", n, MaxConflictRetries, DefaultConflictRetries)
	}
	return nil
}

// Target returns the version a migration of the CRD in st moves objects
// to: the version it stores, which must be want when want isn't empty. A
// CRD that stores another version than the caller's is a mistake: the
// new CRD is not applied yet, or the caller names the wrong version.
func Target(st ports.StorageState, want string) (string, error) {
	if st.Storage == "" {
		return "", fmt.Errorf("CRD %s: no version of spec.versions is marked storage", st.Name)
	}
	if want != "" && st.Storage != want {
		return "", fmt.Errorf("CRD %s: spec.versions stores %s, not %s: apply the CRD that stores %s first", st.Name, st.Storage, want, want)
	}
	return st.Storage, nil
}

// Done reports whether the CRD in st needs no migration to version:
// storedVersions is that version alone and no run was left unfinished.
func Done(st ports.StorageState, version string) bool {
	return st.Checkpoint == "" && slices.Equal(st.StoredVersions, []string{version})
}

// Trim returns the storedVersions to set on the CRD now, read at the end
// of a migration to version that began with the CRD at start: version
// alone. It is safe only when the CRD stored version, at the same
// generation, all along: objects written since were stored in version,
// and the ones before were rewritten. Otherwise it returns an error
// saying what changed, and nothing may be trimmed.
func Trim(start, now ports.StorageState, version string) ([]string, error) {
	if now.Storage != version {
		return nil, fmt.Errorf("CRD %s: its storage version moved from %s to %s during the migration: run it again", now.Name, version, now.Storage)
	}
	if now.Generation != start.Generation {
		return nil, fmt.Errorf("CRD %s: its spec changed during the migration (generation %d, then %d): run it again", now.Name, start.Generation, now.Generation)
	}
	return []string{version}, nil
}

// checkpoint is what a run keeps on the CRD after each page: enough to
// go on from the next page, and to tell whether the CRD is still the one
// it was made for.
type checkpoint struct {
	// Version and Generation are the CRD's storage version and generation
	// when the migration began: a checkpoint of another is stale.
	Version    string `json:"version"`
	Generation int64  `json:"generation"`
	// Continue is the token of the next page.
	Continue string `json:"continue"`
	// Listed says every page is rewritten and only the trim is left, so
	// that a run stopped between the two doesn't list everything again.
	Listed bool `json:"listed,omitempty"`
	// The counts so far, and the last object rewritten.
	Pages     int    `json:"pages"`
	Rewritten int    `json:"rewritten"`
	Gone      int    `json:"gone"`
	Conflicts int    `json:"conflicts"`
	Last      string `json:"last,omitempty"`
}

// encode returns c as the CRD keeps it.
func (c checkpoint) encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("the checkpoint: %w", err)
	}
	return string(b), nil
}

// resume returns the checkpoint of st to go on from, in a migration to
// version: none (ok false) when st has none, one of another version or
// generation, whose continue token lists another storage's snapshot, or
// one that doesn't read. Starting over is always safe, since rewriting
// an object already in the storage version changes nothing, whereas
// failing on an annotation edited by hand would fail every run for good.
func resume(st ports.StorageState, version string) (checkpoint, bool) {
	if st.Checkpoint == "" {
		return checkpoint{}, false
	}
	var c checkpoint
	if err := json.Unmarshal([]byte(st.Checkpoint), &c); err != nil {
		return checkpoint{}, false
	}
	if c.Version != version || c.Generation != st.Generation || (c.Continue == "" && !c.Listed) {
		return checkpoint{}, false
	}
	return c, true
}

// gone reports whether err says the object no longer exists.
func gone(err error) bool { return errors.Is(err, ports.ErrGone) }
