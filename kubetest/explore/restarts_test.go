package explore_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest/internal/corpus"
)

// keptRestarts reports whether a sequence kept in dir restarts the API
// server. A kept sequence replays its restarts whatever the Config's
// Faults say, so a subtest whose corpus restarts can't run beside
// others on their shared cluster: each explorer knows of its own
// restarts alone.
func keptRestarts(t *testing.T, dir string) bool {
	t.Helper()
	kept, err := corpus.Read(dir)
	require.NoError(t, err)
	for _, k := range kept {
		for _, raw := range k.Steps {
			var step struct {
				RestartAfter int `json:"restartAfter"`
			}
			require.NoError(t, json.Unmarshal(raw, &step), "%s", k.Path)
			if step.RestartAfter > 0 {
				return true
			}
		}
	}
	return false
}

func TestKeptRestarts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"no corpus", nil, false},
		{"crashes and failed requests", map[string]string{
			"a": `{"op":"create","name":"explore-0","spec":{"size":1},"crashAfter":1,"failAt":2,"failWith":500}` + "\n",
		}, false},
		{"a restart in a later file's later step", map[string]string{
			"a": `{"op":"create","name":"explore-0","spec":{"size":1}}` + "\n",
			"b": `{"op":"create","name":"explore-0","spec":{"size":1}}` + "\n" + `{"op":"delete","name":"explore-0","crashAfter":2,"restartAfter":1}` + "\n",
		}, true},
		{"a file of the first form", map[string]string{"a": "seed 1 sequence 2\n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.files == nil {
				dir = filepath.Join(dir, "none")
			}
			for name, data := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600))
			}
			require.Equal(t, tc.want, keptRestarts(t, dir))
		})
	}
}
