package image_test

import (
	"debug/elf"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/image"
)

// TestLayoutModes shows every file of the OCI image layout is readable
// by all and executable by none (0644), every directory 0755, whatever
// the umask: the layer blobs that go-containerregistry writes through a
// temporary file of mode 0600 too, which a registry client or daemon
// run as another user could not read.
func TestLayoutModes(t *testing.T) {
	images, err := image.Build(image.Spec{
		Name: "op", Tag: "op:dev",
		Binaries: [][]byte{fakeELF(elf.EM_X86_64, ""), fakeELF(elf.EM_AARCH64, "")},
	})
	require.NoError(t, err)
	for _, umask := range []int{0o022, 0o077} {
		old := syscall.Umask(umask)
		dir := filepath.Join(t.TempDir(), "op.oci")
		err := images.WriteLayout(dir)
		syscall.Umask(old)
		require.NoError(t, err)

		files := 0
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			require.NoError(t, err)
			info, err := os.Lstat(path)
			require.NoError(t, err)
			want := fs.FileMode(0o644)
			if d.IsDir() {
				want = fs.ModeDir | 0o755
			} else {
				files++
			}
			require.Equal(t, want.String(), info.Mode().String(), "umask %#o: %s", umask, path)
			return nil
		}))
		require.Equal(t, 2+2*3+1, files, "oci-layout, index.json, each image's layer, config and manifest, and the index")
	}
}
