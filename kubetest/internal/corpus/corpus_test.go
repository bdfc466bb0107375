package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       Kept
		err        string
	}{
		{name: "a line", data: "seed 3 sequence 1\n", want: Kept{Seed: 3, Sequence: 1}},
		{name: "with comments", data: "# sequence 1 of seed 3 fails: ...\n#   1. create x\nseed 3 sequence 1", want: Kept{Seed: 3, Sequence: 1}},
		{name: "empty", data: "# only why\n", err: `no "seed S sequence N" line`},
		{name: "two sequences", data: "seed 1 sequence 0\nseed 2 sequence 0\n", err: `line 2: "seed 2 sequence 0": a file keeps one sequence`},
		{name: "words after", data: "seed 1 sequence 0 more\n", err: `line 1: "seed 1 sequence 0 more": want "seed S sequence N"`},
		{name: "a negative seed", data: "seed -1 sequence 0\n", err: `line 1: "seed -1 sequence 0": want "seed S sequence N"`},
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
	f.Fuzz(func(t *testing.T, data string) {
		k, err := Parse(data)
		if err != nil {
			return
		}
		again, err := Parse(fmt.Sprintf("seed %d sequence %d\n", k.Seed, k.Sequence))
		require.NoError(t, err)
		require.Equal(t, k, again)
	})
}

func TestRead_reports_every_file_that_doesnt_read(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a":     "seed 1 sequence 0\n",
		"b":     "nonsense\n",
		"c":     "seed 2 sequence 3\n",
		"d":     "",
		"sub/e": "not read: a subtest's\n",
		"sub/f": "seed 9 sequence 9\n",
	} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	}
	kept, err := Read(dir)
	require.EqualError(t, err, fmt.Sprintf("kept sequence %s: line 1: \"nonsense\": want \"seed S sequence N\"\nkept sequence %s: no \"seed S sequence N\" line",
		filepath.Join(dir, "b"), filepath.Join(dir, "d")))
	require.Equal(t, []Kept{{Seed: 1, Sequence: 0}, {Seed: 2, Sequence: 3}}, kept)

	kept, err = Read(filepath.Join(dir, "none"))
	require.NoError(t, err)
	require.Empty(t, kept)
}

func TestWrite_writes_what_Read_reads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "testdata", "explore", "TestX")
	path, err := Write(dir, Kept{Seed: 7, Sequence: 2}, "sequence 2 of seed 7 fails:\nafter step 1: broken")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "seed-7-sequence-2"), path)
	kept, err := Read(dir)
	require.NoError(t, err)
	require.Equal(t, []Kept{{Seed: 7, Sequence: 2}}, kept)
}
