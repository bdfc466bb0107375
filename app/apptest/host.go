package apptest

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loam-dev/loam/app"
)

// ErrOutsideHost is what a Host's FS returns, inside an *fs.PathError, for
// a path outside the Host's directory, so a test never reads the real
// disk by mistake.
var ErrOutsideHost = errors.New("apptest: the path is outside the test Host's directory")

// Host is a machine of the test's own: an in-memory Network, promoted so
// h.Dial, h.Listen, h.Partition and h.Heal reach it, and a temporary
// directory for its files. Host returns it as the app.Host an App runs on.
type Host struct {
	*Network
	tb   testing.TB
	dir  string
	root *os.Root
}

// HostOption configures a test Host. Every HostOption is also an Option of
// Start, where it configures the App's Host.
type HostOption interface {
	Option
	applyHost(*hostConfig)
}

type hostConfig struct {
	files map[string][]byte
}

// WithFiles writes files into the Host's directory when it starts. A key
// is a slash-separated path relative to the directory, such as
// "serviceaccount/token"; its directories are created. A key that is
// absolute or climbs out of the directory fails the test.
func WithFiles(files map[string][]byte) HostOption {
	return filesOption(maps.Clone(files))
}

type filesOption map[string][]byte

func (f filesOption) applyHost(c *hostConfig) {
	if c.files == nil {
		c.files = map[string][]byte{}
	}
	maps.Copy(c.files, f)
}

func (f filesOption) applyStart(c *startConfig) { f.applyHost(&c.host) }

// NewHost returns a Host with an empty Network and a directory of its own
// from tb.TempDir, removed when the test ends. A file WithFiles cannot
// write fails the test.
func NewHost(tb testing.TB, opts ...HostOption) *Host {
	tb.Helper()
	var c hostConfig
	for _, o := range opts {
		o.applyHost(&c)
	}
	h := newHost(tb)
	h.writeFiles(c.files)
	return h
}

func newHost(tb testing.TB) *Host {
	tb.Helper()
	dir := tb.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		tb.Fatalf("apptest: opening the Host's directory: %v", err)
	}
	tb.Cleanup(func() { _ = root.Close() })
	return &Host{Network: NewNetwork(), tb: tb, dir: dir, root: root}
}

// writeFiles writes files in name order, failing the test with every
// name it could not write.
func (h *Host) writeFiles(files map[string][]byte) {
	h.tb.Helper()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(files)) {
		errs = append(errs, h.writeFile(name, files[name]))
	}
	if err := errors.Join(errs...); err != nil {
		h.tb.Fatalf("apptest: WithFiles:\n%v", err)
	}
}

// Host returns the app.Host an App runs on: the Host's Network, and an FS
// that opens the paths Path returns.
func (h *Host) Host() app.Host {
	return app.Host{Network: h.Network, FS: h.FS()}
}

// FS returns the Host's files as an app.FS. Its Open takes operating-system
// paths: an absolute path inside the Host's directory, as Path returns, or
// a path relative to the directory, which is the Host's working
// directory. A path outside the directory fails with an *fs.PathError
// wrapping ErrOutsideHost, and a symbolic link that leads out of it fails
// to open too.
func (h *Host) FS() app.FS { return hostFS{h} }

// Dir returns the Host's directory.
func (h *Host) Dir() string { return h.dir }

// Path returns the operating-system path of the file name in the Host's
// directory, as an App opens it through its FS. name is slash-separated
// and relative to the directory; a trailing slash is kept, so
// Path("serviceaccount/") is a directory's prefix. Path("") is the
// directory itself. A name that is absolute or climbs out of the directory
// fails the test.
func (h *Host) Path(name string) string {
	h.tb.Helper()
	rel, err := localName(name)
	if err != nil {
		h.tb.Fatalf("apptest: Path: %v", err)
	}
	p := filepath.Join(h.dir, rel)
	if strings.HasSuffix(name, "/") {
		p += string(filepath.Separator)
	}
	return p
}

// WriteFile writes data to the file name in the Host's directory,
// creating its directories, and replacing the file in one step, so an App
// reading it concurrently sees the old contents or the new, never a mix:
// as the kubelet rotates a token. name is as Path takes it. A failure
// fails the test.
func (h *Host) WriteFile(name string, data []byte) {
	h.tb.Helper()
	if err := h.writeFile(name, data); err != nil {
		h.tb.Fatalf("apptest: WriteFile: %v", err)
	}
}

// RemoveFile removes the file or empty directory name from the Host's
// directory. name is as Path takes it. A failure, such as a missing file,
// fails the test.
func (h *Host) RemoveFile(name string) {
	h.tb.Helper()
	rel, err := localName(name)
	if err == nil {
		err = fileError(name, h.root.Remove(rel))
	}
	if err != nil {
		h.tb.Fatalf("apptest: RemoveFile: %v", err)
	}
}

func (h *Host) writeFile(name string, data []byte) error {
	rel, err := localName(name)
	if err != nil {
		return err
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := h.root.MkdirAll(dir, 0o700); err != nil {
			return fileError(name, err)
		}
	}
	tmp := rel + ".apptest-tmp"
	if err := h.root.WriteFile(tmp, data, 0o600); err != nil {
		return fileError(name, err)
	}
	return fileError(name, h.root.Rename(tmp, rel))
}

// fileError names the file a test asked for in err, rather than the path
// inside the Host's directory that failed. It returns nil for a nil err.
func fileError(name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("file %q: %w", name, err)
}

// localName turns a slash-separated name into a path relative to the
// Host's directory, refusing one that would leave it.
func localName(name string) (string, error) {
	if name == "" {
		return ".", nil
	}
	rel := filepath.FromSlash(strings.TrimSuffix(name, "/"))
	if rel == "" || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("file %q: %w", name, ErrOutsideHost)
	}
	return rel, nil
}

// hostFS is a Host's app.FS.
type hostFS struct{ h *Host }

// Open opens the named file for reading.
func (f hostFS) Open(name string) (fs.File, error) {
	rel := name
	if filepath.IsAbs(name) {
		r, err := filepath.Rel(f.h.dir, filepath.Clean(name))
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: ErrOutsideHost}
		}
		rel = r
	}
	rel = filepath.Clean(rel)
	if rel != "." && !filepath.IsLocal(rel) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrOutsideHost}
	}
	file, err := f.h.root.Open(rel)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			// Name the path the App asked for, not the one inside the root.
			return nil, &fs.PathError{Op: "open", Path: name, Err: pe.Err}
		}
		return nil, err
	}
	return file, nil
}
