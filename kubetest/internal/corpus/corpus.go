// Package corpus keeps the sequences kubetest's explorer has found
// failing, one file each, so that every later run replays them first, as
// go test -fuzz keeps its inputs in testdata/fuzz.
//
// A file keeps its sequence's steps, each with its faults, one JSON
// object a line, so that it replays the same steps and faults whatever
// the explorer's configuration (issue #47). Files of the first form,
// one line "seed S sequence N" that the explorer regenerates from the
// seed with its configuration, still read, and the explorer rewrites
// them in the new form.
package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Kept is one kept sequence's file.
type Kept struct {
	// Path is the file's path, and Comments its lines starting with #,
	// that say why it was kept, without the # and the space after it.
	Path     string
	Comments []string
	// Steps are the sequence's steps, each a JSON object, in order: the
	// form Write writes. They are nil in a file of the first form.
	Steps []json.RawMessage
	// Seed and Sequence name the sequence of a file of the first form,
	// "seed S sequence N": the Sequence-th of Seed's. Seeded reports it.
	Seed     uint64
	Sequence int
	Seeded   bool
}

// Dir is where the kept sequences of t are by default: testdata/explore/
// and t's name.
func Dir(t *testing.T) string {
	return filepath.Join("testdata", "explore", filepath.FromSlash(t.Name()))
}

// Read reads the sequences kept in dir, in the order of their files'
// names; a dir that doesn't exist keeps none. It returns an error naming
// every file that doesn't read, as Parse says.
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
		k.Path = path
		kept = append(kept, k)
	}
	return kept, errors.Join(errs...)
}

// Parse parses a kept sequence's file: lines starting with #, which say
// why it was kept, and either one JSON object a line, each a step, or, in
// the first form, one line "seed S sequence N". Blank lines are skipped.
// It fails, naming the line, on a line that is neither, on a file of both
// forms or with two "seed" lines, and on a file with no step.
func Parse(data string) (Kept, error) {
	var k Kept
	for n, line := range strings.Split(data, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "#"):
			k.Comments = append(k.Comments, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
			continue
		case strings.HasPrefix(line, "{"):
			if k.Seeded {
				return Kept{}, fmt.Errorf("line %d: a step after the line \"seed %d sequence %d\": a file keeps one sequence", n+1, k.Seed, k.Sequence)
			}
			if !json.Valid([]byte(line)) {
				return Kept{}, fmt.Errorf("line %d: %q: a step that isn't JSON", n+1, line)
			}
			k.Steps = append(k.Steps, json.RawMessage(line))
			continue
		}
		if k.Seeded || len(k.Steps) > 0 {
			return Kept{}, fmt.Errorf("line %d: %q: a file keeps one sequence", n+1, line)
		}
		var rest string
		if c, err := fmt.Sscanf(line+" end", "seed %d sequence %d %s", &k.Seed, &k.Sequence, &rest); err != nil || c != 3 || rest != "end" {
			return Kept{}, fmt.Errorf("line %d: %q: want a step, a JSON object, or \"seed S sequence N\"", n+1, line)
		}
		if k.Sequence < 0 {
			return Kept{}, fmt.Errorf("line %d: sequence %d: want 0 or more", n+1, k.Sequence)
		}
		k.Seeded = true
	}
	if !k.Seeded && len(k.Steps) == 0 {
		return Kept{}, errors.New("no step, and no \"seed S sequence N\" line")
	}
	return k, nil
}

// Name is the name Write gives the file of the Sequence-th sequence of
// seed, when it is kept for the first time.
func Name(seed uint64, sequence int) string {
	return fmt.Sprintf("seed-%d-sequence-%d", seed, sequence)
}

// Write keeps steps, each a JSON object, in the file name of dir, with
// comments, each a line saying why, and returns the file's path. It
// fails when a step isn't one line of JSON, which Parse wouldn't read
// back.
func Write(dir, name string, comments []string, steps []json.RawMessage) (string, error) {
	var b strings.Builder
	for _, c := range comments {
		for line := range strings.SplitSeq(c, "\n") {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	for i, s := range steps {
		var compact bytes.Buffer
		if err := json.Compact(&compact, s); err != nil || !bytes.HasPrefix(compact.Bytes(), []byte("{")) {
			return "", fmt.Errorf("keeping step %d in %s: %q: want a JSON object", i+1, name, s)
		}
		b.Write(compact.Bytes())
		b.WriteString("\n")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, []byte(b.String()), 0o644) //nolint:forbidigo // a test's testdata, as go test -fuzz keeps a failing input
}
