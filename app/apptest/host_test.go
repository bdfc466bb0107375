package apptest_test

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

// fatalTB is a testing.TB whose Fatalf records its message and ends the
// goroutine, so a test can check that a helper fails the test it is given.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs f with a fatalTB and returns what it failed with, or "".
func fatalOf(t *testing.T, f func(tb testing.TB)) string {
	t.Helper()
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.msg
}

// readFile reads the whole file name through fsys, as an App does.
func readFile(fsys app.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(f)
}

func TestHost_files(t *testing.T) {
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{
		"serviceaccount/token":  []byte("first\n"),
		"serviceaccount/ca.crt": []byte("ca"),
		"kubeconfig":            []byte("apiVersion: v1"),
	}))
	fsys := h.Host().FS

	dir := h.Path("serviceaccount/")
	require.True(t, filepath.IsAbs(dir))
	require.Equal(t, filepath.Join(h.Dir(), "serviceaccount")+string(filepath.Separator), dir, "a trailing slash is kept")
	require.Equal(t, h.Dir(), h.Path(""))

	b, err := readFile(fsys, dir+"token")
	require.NoError(t, err)
	require.Equal(t, "first\n", string(b))
	b, err = readFile(fsys, h.Path("serviceaccount/ca.crt"))
	require.NoError(t, err)
	require.Equal(t, "ca", string(b))
	b, err = readFile(fsys, "kubeconfig")
	require.NoError(t, err, "a relative path is relative to the Host's directory")
	require.Equal(t, "apiVersion: v1", string(b))

	h.WriteFile("serviceaccount/token", []byte("rotated\n"))
	b, err = readFile(fsys, dir+"token")
	require.NoError(t, err)
	require.Equal(t, "rotated\n", string(b))
	entries, err := os.ReadDir(h.Path("serviceaccount"))
	require.NoError(t, err)
	require.Len(t, entries, 2, "the rewrite leaves no temporary file behind")

	h.WriteFile("new/deeper/file", []byte("x"))
	b, err = readFile(fsys, h.Path("new/deeper/file"))
	require.NoError(t, err)
	require.Equal(t, "x", string(b))

	h.RemoveFile("kubeconfig")
	_, err = fsys.Open(h.Path("kubeconfig"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	var pathErr *fs.PathError
	require.ErrorAs(t, err, &pathErr)
	require.Equal(t, h.Path("kubeconfig"), pathErr.Path, "the error names the path the App asked for")
}

func TestHost_FS_refuses_paths_outside_its_directory(t *testing.T) {
	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"token": []byte("t")}))
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("real disk"), 0o600))

	for _, name := range []string{
		outside,
		"/etc/hostname",
		"/var/run/secrets/kubernetes.io/serviceaccount/token",
		"../secret",
		h.Path("") + "/../secret",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.FS().Open(name)
			require.ErrorIs(t, err, apptest.ErrOutsideHost)
			var pathErr *fs.PathError
			require.ErrorAs(t, err, &pathErr)
			require.Equal(t, name, pathErr.Path)
		})
	}

	t.Run("a symbolic link out of the directory", func(t *testing.T) {
		require.NoError(t, os.Symlink(outside, h.Path("link")))
		_, err := h.FS().Open(h.Path("link"))
		require.Error(t, err)
	})
}

func TestHost_fails_the_test_on_a_name_outside_its_directory(t *testing.T) {
	tests := []struct {
		name string
		call func(tb testing.TB)
		want string
	}{
		{
			name: "WithFiles",
			call: func(tb testing.TB) {
				apptest.NewHost(tb, apptest.WithFiles(map[string][]byte{"../escape": nil, "/abs": nil, "ok": nil}))
			},
			want: `WithFiles:
file "../escape": apptest: the path is outside the test Host's directory
file "/abs": apptest: the path is outside the test Host's directory`,
		},
		{
			name: "Path",
			call: func(tb testing.TB) { apptest.NewHost(tb).Path("../x") },
			want: `Path: file "../x": apptest: the path is outside the test Host's directory`,
		},
		{
			name: "WriteFile",
			call: func(tb testing.TB) { apptest.NewHost(tb).WriteFile("/etc/passwd", nil) },
			want: `WriteFile: file "/etc/passwd": apptest: the path is outside the test Host's directory`,
		},
		{
			name: "RemoveFile of a missing file",
			call: func(tb testing.TB) { apptest.NewHost(tb).RemoveFile("missing") },
			want: `RemoveFile: file "missing": no such file or directory`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, "apptest: "+tt.want, fatalOf(t, tt.call))
		})
	}
}

func TestHost_works_inside_a_bubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"token": []byte("t")}))
		b, err := readFile(h.FS(), h.Path("token"))
		require.NoError(t, err)
		require.Equal(t, "t", string(b))

		var network app.Network = h // the Host is a Network itself
		l, err := network.Listen(t.Context(), "tcp", "api.test:443")
		require.NoError(t, err)
		require.NoError(t, l.Close())
	})
}
