package explore

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest/internal/corpus"
	"github.com/loam-dev/loam/kubetest/internal/generate"
)

// everyFault returns a step with every fault field of Step set, by
// reflection, so a field added without a kind of faultKinds is caught.
func everyFault(t *testing.T) Step {
	t.Helper()
	s := Step{Step: generate.Step{Op: generate.Update, Name: "a", Spec: map[string]any{"size": int64(1)}}}
	v := reflect.ValueOf(&s).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if v.Type().Field(i).Anonymous {
			continue
		}
		switch f.Kind() {
		case reflect.Int:
			f.SetInt(1)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString(kubeletHealthy)
		default:
			t.Fatalf("Step.%s: a field of kind %s the test can't set", v.Type().Field(i).Name, f.Kind())
		}
	}
	s.FailWith = 503
	return s
}

// Every fault field of Step belongs to a kind of faultKinds, which
// keeps it, says it and drops it; and the kinds draw from streams apart.
func TestFaultKinds_cover_every_field(t *testing.T) {
	s := everyFault(t)
	cleared := s
	streams := map[uint64]string{}
	for _, k := range faultKinds() {
		require.True(t, k.has(s), "%s: has", k.name)
		require.NotEmpty(t, k.say(s), "%s: said", k.name)
		k.clear(&cleared)
		require.False(t, k.has(cleared), "%s: cleared", k.name)
		require.Empty(t, k.say(cleared), "%s: nothing said once cleared", k.name)
		other, taken := streams[k.stream]
		require.False(t, taken, "%s draws from %s's stream", k.name, other)
		streams[k.stream] = k.name
	}
	require.Equal(t, Step{Step: s.Step}, cleared, "every fault field is some kind's")

	raw, err := encodeSteps([]Step{s})
	require.NoError(t, err)
	back, err := decodeSteps(raw)
	require.NoError(t, err)
	require.Equal(t, []Step{s}, back, "every fault field is kept and read back")
}

// Every kept file, of this package and of the examples', reads through
// the kinds and writes back byte for byte, or, for a step written by
// hand with its keys in another order, to the same JSON: the table
// changed how steps are kept, not what a kept file says.
func TestFaultKinds_keep_every_kept_file_as_it_is(t *testing.T) {
	var dirs []string
	for _, root := range []string{"testdata", filepath.Join("..", "..", "examples")} {
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(path), "testdata/explore/") && !slices.Contains(dirs, filepath.Dir(path)) {
				dirs = append(dirs, filepath.Dir(path))
			}
			return err
		}))
	}
	files, same := 0, 0
	var byHand []string
	for _, dir := range dirs {
		kept, err := corpus.Read(dir)
		require.NoError(t, err, dir)
		for _, f := range kept {
			if f.Seeded {
				continue
			}
			files++
			steps, err := decodeSteps(f.Steps)
			require.NoError(t, err, f.Path)
			raw, err := encodeSteps(steps)
			require.NoError(t, err, f.Path)
			require.Len(t, raw, len(f.Steps), f.Path)
			for i := range raw {
				if string(f.Steps[i]) == string(raw[i]) {
					same++
					continue
				}
				// A step written by hand, its keys in an order of its
				// own, reads back the same.
				require.JSONEq(t, string(f.Steps[i]), string(raw[i]), "%s: step %d", f.Path, i+1)
				byHand = append(byHand, fmt.Sprintf("%s: step %d", f.Path, i+1))
			}
		}
	}
	require.GreaterOrEqual(t, files, 10, "the kept files with steps, found in %d directories", len(dirs))
	t.Logf("%d kept files, %d steps written back byte for byte, %d written by hand in another order: %v", files, same, len(byHand), byHand)
}
