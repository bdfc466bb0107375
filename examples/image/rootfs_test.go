package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/image"
	"github.com/loam-dev/loam/examples/otlp/otlptest"
)

// TestBaseFiles shows the layer holds what distroless/static holds: a CA
// bundle Go parses, of Mozilla's roots; a /tmp anyone may write to,
// sticky; /etc/passwd and /etc/group naming the nonroot user 65532 whose
// home is its own; every entry owned by number, with a fixed time, in
// name order.
func TestBaseFiles(t *testing.T) {
	images, err := image.Build(image.Spec{Name: "op", Tag: "op:dev", Binaries: [][]byte{fakeELF(elf.EM_X86_64, "")}})
	require.NoError(t, err)
	layers, err := images.ByArch["amd64"].Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	files := layerFiles(t, layers[0])

	bundle, ok := files[image.CABundle]
	require.True(t, ok, "the layer holds %s", image.CABundle)
	require.Equal(t, byte(tar.TypeReg), bundle.hdr.Typeflag)
	require.Equal(t, int64(0o644), bundle.hdr.Mode)
	var roots []*x509.Certificate
	rest := bundle.content
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		require.Equal(t, "CERTIFICATE", block.Type)
		c, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		require.True(t, c.IsCA, "%s is a CA", c.Subject)
		roots = append(roots, c)
	}
	require.Empty(t, strings.TrimSpace(string(rest)), "nothing after the last certificate")
	require.Greater(t, len(roots), 100, "Mozilla's roots: over a hundred")
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(bundle.content))
	var subjects []string
	for _, c := range roots {
		subjects = append(subjects, c.Subject.CommonName)
	}
	require.Contains(t, subjects, "ISRG Root X1", "Let's Encrypt's root")

	tmp, ok := files["tmp/"]
	require.True(t, ok, "the layer holds /tmp")
	require.Equal(t, byte(tar.TypeDir), tmp.hdr.Typeflag)
	require.Equal(t, int64(0o1777), tmp.hdr.Mode, "anyone may write to /tmp, and delete only their own files")
	require.Equal(t, fs.ModeDir|fs.ModeSticky|0o777, tmp.hdr.FileInfo().Mode())
	require.Zero(t, tmp.hdr.Uid)

	passwd, ok := files[image.Passwd]
	require.True(t, ok, "the layer holds /etc/passwd")
	require.Contains(t, strings.Split(string(passwd.content), "\n"), "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin")
	group, ok := files[image.Group]
	require.True(t, ok, "the layer holds /etc/group")
	require.Contains(t, strings.Split(string(group.content), "\n"), "nonroot:x:65532:")
	home, ok := files["home/nonroot/"]
	require.True(t, ok, "the nonroot user's home")
	require.Equal(t, 65532, home.hdr.Uid)
	require.Equal(t, int64(0o700), home.hdr.Mode)

	var names []string
	for name, f := range files {
		names = append(names, name)
		require.Zero(t, f.hdr.ModTime.Unix(), "%s: a fixed time", name)
		require.Empty(t, f.hdr.Uname, "%s: owners by number alone", name)
		require.Empty(t, f.hdr.Gname, "%s: owners by number alone", name)
	}
	require.ElementsMatch(t, []string{
		"etc/", image.Group, image.Passwd, "etc/ssl/", "etc/ssl/certs/", image.CABundle,
		"home/", "home/nonroot/", "op", "root/", "tmp/",
	}, names)
}

// TestLayout shows the OCI image layout holds an image index of one
// image per architecture, each with its platform, the labels in every
// config and as annotations on the manifests and the index, named in
// index.json by its tag; and the docker save tarball holds the image of
// the architecture asked for, and none for one there is no binary of.
func TestLayout(t *testing.T) {
	labels := image.Labels{Source: "https://github.com/loam-dev/loam", Revision: "0f10bd1", Version: "v0.1.0"}
	images, err := image.Build(image.Spec{
		Name: "op", Tag: "op:dev", Labels: labels,
		Binaries: [][]byte{fakeELF(elf.EM_X86_64, ""), fakeELF(elf.EM_AARCH64, "")},
	})
	require.NoError(t, err)
	require.Equal(t, []string{"amd64", "arm64"}, images.Architectures())
	dir := filepath.Join(t.TempDir(), "op.oci")
	require.NoError(t, images.WriteLayout(dir))

	b, err := os.ReadFile(filepath.Join(dir, "oci-layout"))
	require.NoError(t, err)
	require.JSONEq(t, `{"imageLayoutVersion":"1.0.0"}`, string(b))
	p, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := p.ImageIndex()
	require.NoError(t, err)
	topManifest, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, topManifest.Manifests, 1, "index.json names one image: the index of both architectures")
	named := topManifest.Manifests[0]
	require.Equal(t, types.OCIImageIndex, named.MediaType)
	require.Equal(t, "dev", named.Annotations["org.opencontainers.image.ref.name"])
	require.Equal(t, "docker.io/library/op:dev", named.Annotations["io.containerd.image.name"])

	idx, err := top.ImageIndex(named.Digest)
	require.NoError(t, err)
	idxManifest, err := idx.IndexManifest()
	require.NoError(t, err)
	wantAnnotations := map[string]string{
		"org.opencontainers.image.source":   labels.Source,
		"org.opencontainers.image.revision": labels.Revision,
		"org.opencontainers.image.version":  labels.Version,
	}
	require.Equal(t, wantAnnotations, idxManifest.Annotations)
	var platforms []string
	for _, d := range idxManifest.Manifests {
		require.Equal(t, types.OCIManifestSchema1, d.MediaType)
		require.NotNil(t, d.Platform)
		platforms = append(platforms, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		require.NoError(t, err)
		m, err := img.Manifest()
		require.NoError(t, err)
		require.Equal(t, wantAnnotations, m.Annotations)
		require.Equal(t, types.OCIConfigJSON, m.Config.MediaType)
		for _, l := range m.Layers {
			require.Equal(t, types.OCILayer, l.MediaType)
		}
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		require.Equal(t, wantAnnotations, cfg.Config.Labels)
		require.Equal(t, d.Platform.Architecture, cfg.Architecture)
	}
	require.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)

	var tb bytes.Buffer
	require.NoError(t, images.WriteTarball(&tb, "arm64"))
	img, err := tarball.Image(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(tb.Bytes())), nil }, nil)
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	require.Equal(t, "arm64", cfg.Architecture)
	// docker save's format keeps the config and the layers, not the
	// manifest, which a reader makes up again.
	want, err := images.ByArch["arm64"].ConfigName()
	require.NoError(t, err)
	got, err := img.ConfigName()
	require.NoError(t, err)
	require.Equal(t, want, got, "the tarball's image is the layout's")
	require.ErrorContains(t, images.WriteTarball(io.Discard, "s390x"), "no image for linux/s390x, only for amd64, arm64")

	// Writing again replaces the layout, leaving nothing of the last one.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "blobs", "sha256", "stale"), nil, 0o600))
	require.NoError(t, images.WriteLayout(dir))
	require.NoFileExists(t, filepath.Join(dir, "blobs", "sha256", "stale"))
	entries, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary directory left beside the layout")
}

// requireReachesHTTPS runs the binary name of the image extracted at
// root as a container would find it: with SSL_CERT_FILE the image's CA
// bundle plus the test's CA, SSL_CERT_DIR the image's certs directory,
// nothing else from the host (no HOME, no PATH), and an OTLP endpoint
// over HTTPS, which the test's CA alone signs. The binary reaches it;
// with the image's bundle alone, it doesn't.
func requireReachesHTTPS(t *testing.T, root, name string) {
	t.Helper()
	receiver := otlptest.NewReceiver()
	srv := httptest.NewUnstartedServer(receiver)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	bundle, err := os.ReadFile(filepath.Join(root, image.CABundle))
	require.NoError(t, err)
	testCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	run := func(certs []byte) string {
		certFile := filepath.Join(t.TempDir(), "ca-certificates.crt")
		require.NoError(t, os.WriteFile(certFile, certs, 0o600))
		var stderr bytes.Buffer
		cmd := exec.CommandContext(t.Context(), filepath.Join(root, name))
		cmd.Env = []string{
			"SSL_CERT_FILE=" + certFile,
			"SSL_CERT_DIR=" + filepath.Join(root, filepath.Dir(image.CABundle)),
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL,
		}
		cmd.Dir = root
		cmd.Stderr = &stderr
		_ = cmd.Run() // it exits 78: its other variables are missing
		return stderr.String()
	}

	stderr := run(bundle)
	require.Empty(t, receiver.Requests(), "the test's CA is in no bundle of the image's: stderr: %s", stderr)
	require.Contains(t, stderr, "x509: certificate signed by unknown authority")

	stderr = run(append(append([]byte{}, bundle...), testCA...))
	require.NotEmpty(t, receiver.Requests(), "the image's binary reaches the HTTPS endpoint: stderr: %s", stderr)
	require.NotContains(t, stderr, "x509:")
}

// extract writes files to a new directory, as a container runtime lays
// out the layer, and returns its path.
func extract(t *testing.T, files map[string]file) string {
	t.Helper()
	root := t.TempDir()
	for name, f := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		mode := f.hdr.FileInfo().Mode().Perm() | 0o200 // the test removes what it wrote
		if f.hdr.Typeflag == tar.TypeDir {
			require.NoError(t, os.MkdirAll(path, mode|0o700))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, f.content, mode))
	}
	return root
}

// readTree returns every regular file under dir by its slash-separated
// path from dir.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	tree := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		tree[filepath.ToSlash(rel)] = b
		return err
	}))
	return tree
}
