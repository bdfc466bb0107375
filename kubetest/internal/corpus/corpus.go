// Package corpus keeps the sequences kubetest's explorer has found
// failing, one file each, so that every later run replays them first, as
// go test -fuzz keeps its inputs in testdata/fuzz.
package corpus

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Kept names a kept sequence: the Sequence-th of Seed's.
type Kept struct {
	Seed     uint64
	Sequence int
}

// Dir is where the kept sequences of t are by default: testdata/explore/
// and t's name.
func Dir(t *testing.T) string {
	return filepath.Join("testdata", "explore", filepath.FromSlash(t.Name()))
}

// Read reads the sequences kept in dir, in the order of their
// files' names; a dir that doesn't exist keeps none. A file holds one
// line "seed S sequence N", and any number of lines starting with #,
// which say why it was kept. It returns an error naming every file that
// doesn't read.
func Read(dir string) ([]Kept, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the explorer's corpus: %w", err)
	}
	var (
		kept []Kept
		errs []error
	)
	for _, entry := range entries {
		if entry.IsDir() {
			// A subtest's corpus.
			continue
		}
		path := filepath.Join(dir, entry.Name())
		data, err := os.ReadFile(path) //nolint:forbidigo // a test's testdata, as go test -fuzz reads its corpus
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the explorer's corpus: %w", err))
			continue
		}
		k, err := Parse(string(data))
		if err != nil {
			errs = append(errs, fmt.Errorf("kept sequence %s: %w", path, err))
			continue
		}
		kept = append(kept, k)
	}
	return kept, errors.Join(errs...)
}

// Parse parses a kept sequence's file.
func Parse(data string) (Kept, error) {
	var (
		k     Kept
		found bool
	)
	for n, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if found {
			return Kept{}, fmt.Errorf("line %d: %q: a file keeps one sequence", n+1, line)
		}
		var rest string
		if c, err := fmt.Sscanf(line+" end", "seed %d sequence %d %s", &k.Seed, &k.Sequence, &rest); err != nil || c != 3 || rest != "end" {
			return Kept{}, fmt.Errorf("line %d: %q: want \"seed S sequence N\"", n+1, line)
		}
		if k.Sequence < 0 {
			return Kept{}, fmt.Errorf("line %d: sequence %d: want 0 or more", n+1, k.Sequence)
		}
		found = true
	}
	if !found {
		return Kept{}, errors.New(`no "seed S sequence N" line`)
	}
	return k, nil
}

// Write keeps k in dir, with why, a failure's report, as comments, and
// returns the file's path.
func Write(dir string, k Kept, why string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("seed-%d-sequence-%d", k.Seed, k.Sequence))
	var b strings.Builder
	for _, line := range strings.Split(why, "\n") {
		b.WriteString("# " + line + "\n")
	}
	fmt.Fprintf(&b, "seed %d sequence %d\n", k.Seed, k.Sequence)
	return path, os.WriteFile(path, []byte(b.String()), 0o644) //nolint:forbidigo // a test's testdata, as go test -fuzz keeps a failing input
}
