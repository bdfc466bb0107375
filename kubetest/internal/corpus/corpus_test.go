package corpus

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	steps := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i := range s {
			out[i] = json.RawMessage(s[i])
		}
		return out
	}
	for _, tc := range []struct {
		name, data string
		want       Kept
		err        string
	}{
		{name: "steps", data: "{\"op\":\"create\"}\n\n{\"op\":\"delete\"}\n", want: Kept{Steps: steps(`{"op":"create"}`, `{"op":"delete"}`)}},
		{name: "steps with comments", data: "# sequence 1 of seed 3 fails: ...\n#   1. create x\n{\"op\":\"create\"}", want: Kept{Comments: []string{"sequence 1 of seed 3 fails: ...", "  1. create x"}, Steps: steps(`{"op":"create"}`)}},
		{name: "the first form", data: "seed 3 sequence 1\n", want: Kept{Seed: 3, Sequence: 1, Seeded: true}},
		{name: "the first form with comments", data: "# why\nseed 3 sequence 1", want: Kept{Comments: []string{"why"}, Seed: 3, Sequence: 1, Seeded: true}},
		{name: "empty", data: "# only why\n", err: `no step, and no "seed S sequence N" line`},
		{name: "a step that isn't JSON", data: "{\"op\":\n", err: `line 1: "{\"op\":": a step that isn't JSON`},
		{name: "both forms", data: "seed 1 sequence 0\n{}\n", err: `line 2: a step after the line "seed 1 sequence 0": a file keeps one sequence`},
		{name: "both forms, the other way", data: "{}\nseed 1 sequence 0\n", err: `line 2: "seed 1 sequence 0": a file keeps one sequence`},
		{name: "two sequences", data: "seed 1 sequence 0\nseed 2 sequence 0\n", err: `line 2: "seed 2 sequence 0": a file keeps one sequence`},
		{name: "words after", data: "seed 1 sequence 0 more\n", err: `line 1: "seed 1 sequence 0 more": want a step, a JSON object, or "seed S sequence N"`},
		{name: "a negative seed", data: "seed -1 sequence 0\n", err: `line 1: "seed -1 sequence 0": want a step, a JSON object, or "seed S sequence N"`},
		{name: "a negative sequence", data: "seed 1 sequence -2\n", err: `line 1: sequence -2: want 0 or more`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := Parse(tc.data)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, k)
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("seed 3 sequence 1\n")
	f.Add("# why\nseed 18446744073709551615 sequence 0")
	f.Add("# why\n{\"op\":\"create\",\"spec\":{\"size\":1}}\n{\"op\":\"delete\"}\n")
	f.Fuzz(func(t *testing.T, data string) {
		k, err := Parse(data)
		if err != nil {
			return
		}
		if k.Seeded {
			again, err := Parse(fmt.Sprintf("seed %d sequence %d\n", k.Seed, k.Sequence))
			require.NoError(t, err)
			require.Equal(t, k.Seed, again.Seed)
			require.Equal(t, k.Sequence, again.Sequence)
			return
		}
		// What Write writes of what Parse read reads back the same.
		dir := t.TempDir()
		path, err := Write(dir, "kept", k.Comments, k.Steps)
		require.NoError(t, err)
		again, err := Read(dir)
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Equal(t, path, again[0].Path)
		require.Len(t, again[0].Steps, len(k.Steps))
		for i := range k.Steps {
			require.JSONEq(t, string(k.Steps[i]), string(again[0].Steps[i]))
		}
	})
}

func TestRead_reports_every_file_that_doesnt_read(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a":     "seed 1 sequence 0\n",
		"b":     "nonsense\n",
		"c":     "{\"op\":\"create\"}\n",
		"d":     "",
		"sub/e": "not read: a subtest's\n",
		"sub/f": "seed 9 sequence 9\n",
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	}
	kept, err := Read(dir)
	require.EqualError(t, err, fmt.Sprintf("kept sequence %s: line 1: \"nonsense\": want a step, a JSON object, or \"seed S sequence N\"\nkept sequence %s: no step, and no \"seed S sequence N\" line",
		filepath.Join(dir, "b"), filepath.Join(dir, "d")))
	require.Equal(t, []Kept{
		{Path: filepath.Join(dir, "a"), Seed: 1, Sequence: 0, Seeded: true},
		{Path: filepath.Join(dir, "c"), Steps: []json.RawMessage{json.RawMessage(`{"op":"create"}`)}},
	}, kept)

	kept, err = Read(filepath.Join(dir, "none"))
	require.NoError(t, err)
	require.Empty(t, kept)
}

func TestWrite_writes_what_Read_reads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "testdata", "explore", "TestX")
	steps := []json.RawMessage{json.RawMessage("{\n  \"op\": \"create\",\n  \"spec\": {\"size\": 2}\n}"), json.RawMessage(`{"op":"delete"}`)}
	path, err := Write(dir, Name(7, 2), []string{"sequence 2 of seed 7 fails:\nafter step 1: broken"}, steps)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "seed-7-sequence-2"), path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# sequence 2 of seed 7 fails:\n# after step 1: broken\n{\"op\":\"create\",\"spec\":{\"size\":2}}\n{\"op\":\"delete\"}\n", string(data),
		"a step a line, compacted")
	kept, err := Read(dir)
	require.NoError(t, err)
	require.Equal(t, []Kept{{
		Path:     path,
		Comments: []string{"sequence 2 of seed 7 fails:", "after step 1: broken"},
		Steps:    []json.RawMessage{json.RawMessage(`{"op":"create","spec":{"size":2}}`), json.RawMessage(`{"op":"delete"}`)},
	}}, kept)

	_, err = Write(dir, "bad", nil, []json.RawMessage{json.RawMessage(`[1]`)})
	require.EqualError(t, err, `keeping step 1 in bad: "[1]": want a JSON object`)
}
