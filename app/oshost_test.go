package app_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

func TestOSHostNetwork(t *testing.T) {
	ctx := t.Context()
	h := app.OSHost()
	ln, err := h.Listen(ctx, "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()

	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = io.WriteString(c, "hello")
			_ = c.Close()
		}
		accepted <- err
	}()
	c, err := h.Dial(ctx, "tcp", ln.Addr().String())
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	require.NoError(t, <-accepted)
}

func TestOSHostFS(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(name, []byte("secret"), 0o600))

	h := app.OSHost()
	f, err := h.FS.Open(name)
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, "secret", string(got))

	f, err = h.FS.Open(filepath.Join(dir, "missing"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Nil(t, f, "no file, not a nil *os.File inside an fs.File")
}

// mainHelperArg makes the test binary run TestMainHelper's App with
// app.Main instead of its tests.
const mainHelperArg = "loam-app-main-helper"

// TestMainHelper is the App TestMain runs in a process of its own. Its Init
// prints what the OS process gave it, then serves until a signal, or fails
// when FAIL is set.
func TestMainHelper(t *testing.T) {
	if !slices.Contains(os.Args, mainHelperArg) {
		t.Skip("runs only in TestMainRunsTheOSProcess's child process")
	}
	app.Main(func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		if v, ok := s.Process.Environment.LookupEnv("FAIL"); ok {
			return nil, errors.New(v)
		}
		greeting, _ := s.Process.Environment.LookupEnv("GREETING")
		_, _ = fmt.Fprintf(s.Process.Stdout, "%s %v\n", greeting, slices.Contains(s.Process.Args, mainHelperArg))
		return []app.Service{&fakeService{name: "waiter"}}, nil
	})
}

func TestMainRunsTheOSProcess(t *testing.T) {
	child := func(env ...string) (*exec.Cmd, io.Reader, *strings.Builder) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMainHelper$", "-test.count=1", "--", mainHelperArg)
		cmd.Env = env // the child sees these variables and no others
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		return cmd, stdout, &stderr
	}

	t.Run("a signal stops it with 0", func(t *testing.T) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			cmd, stdout, stderr := child("GREETING=hello")
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(stdout).ReadString('\n')
			require.NoError(t, err, "stderr: %s", stderr)
			require.Equal(t, "hello true\n", line, "Main reads the real environment and arguments")

			require.NoError(t, cmd.Process.Signal(sig))
			require.NoError(t, cmd.Wait(), "stderr: %s", stderr)
			require.Equal(t, 0, cmd.ProcessState.ExitCode())
		}
	})
	t.Run("a failed Init exits 78", func(t *testing.T) {
		cmd, stdout, stderr := child("FAIL=config NAME: not found")
		require.NoError(t, cmd.Start())
		_, _ = io.Copy(io.Discard, stdout)
		var exit *exec.ExitError
		require.ErrorAs(t, cmd.Wait(), &exit)
		require.Equal(t, 78, exit.ExitCode())
		require.True(t, strings.HasPrefix(stderr.String(), "init: config NAME: not found\n"), stderr.String())
	})
}
