package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// childDir names, in the environment of the test binary run again, the
// directory whose website/go.mod the child rewrites under a file size
// limit.
const childDir = "KUBETESTMOD_TEST_FSIZE_DIR"

// TestRun_a_write_that_fails_leaves_the_go_mod_whole runs the command
// again in a child process whose files may not grow past 128 bytes, as a
// full disk stops a write part way: the write fails, and the go.mod is
// the one the person had, not its first 128 bytes.
func TestRun_a_write_that_fails_leaves_the_go_mod_whole(t *testing.T) {
	//nolint:forbidigo // the test binary, run again as the child, is told its directory so
	if dir := os.Getenv(childDir); dir != "" {
		// The child: SIGXFSZ would kill it; ignored, the write returns
		// EFBIG instead.
		signal.Ignore(syscall.SIGXFSZ)
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 128, Max: 128}))
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{filepath.Join(dir, "website", "go.mod")}, &stdout, &stderr, nil)
		require.ErrorIs(t, err, syscall.EFBIG)
		return
	}

	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "loam", "kubetest"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "website"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "loam", "kubetest", "go.mod"), []byte(kubetestGoMod), 0o600))
	gomod := filepath.Join(root, "website", "go.mod")
	before := userHead + "\nreplace (\n\tgithub.com/loam-dev/loam => ../loam\n\tgithub.com/loam-dev/loam/kubetest => ../loam/kubetest\n)\n"
	require.Greater(t, len(before), 128, "the go.mod is longer than the limit, so a cut one is seen")
	require.NoError(t, os.WriteFile(gomod, []byte(before), 0o600))

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRun_a_write_that_fails_leaves_the_go_mod_whole$", "-test.count=1")
	cmd.Env = append(cmd.Environ(), childDir+"="+root)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child:\n%s", out)

	after, err := os.ReadFile(gomod)
	require.NoError(t, err)
	require.Equal(t, before, string(after))
	entries, err := os.ReadDir(filepath.Join(root, "website"))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left beside the go.mod")
}
