package image_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/examples/image"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// operator is one example operator whose image make image builds.
type operator struct {
	// name is the binary's name, in bin/ and in the image.
	name string
	// pkg is its main package, in the examples module.
	pkg string
	// dir is the example's directory: its Dockerfile and deploy/.
	dir string
	// tag is the image deploy/deployment.yaml runs.
	tag string
	// missing are the variables Init reports missing in an empty
	// environment: the required ones.
	missing []string
}

var operators = []operator{
	{
		name:    "memcached-operator",
		pkg:     "./memcached/cmd/memcached",
		dir:     "../memcached",
		tag:     "memcached-operator:dev",
		missing: []string{"CONTROLLER_NAME", "POD_NAMESPACE", "POD_NAME"},
	},
	{
		name:    "databases-controller",
		pkg:     "./databases/cmd/databases",
		dir:     "../databases",
		tag:     "databases-controller:dev",
		missing: []string{"CONTROLLER_NAME", "POD_NAMESPACE", "POD_NAME"},
	},
}

// TestOperatorImages builds each operator as make image does, a static
// Linux binary, puts it in an image, writes the tarball, and reads it
// back as docker load would: the image holds the binary beside
// distroless/static's files and no shell, runs it as 65532, and the
// binary, run as its entrypoint with an empty environment, exits 78
// naming the variables it needs; run with the image's CA bundle (and the
// test's CA) and an OTLP endpoint over HTTPS, it reaches the endpoint.
func TestOperatorImages(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := buildStatic(t, op.pkg, filepath.Join(dir, op.name))
			binary, err := os.ReadFile(bin)
			require.NoError(t, err)

			images, err := image.Build(image.Spec{Name: op.name, Tag: op.tag, Binaries: [][]byte{binary}})
			require.NoError(t, err)
			var out bytes.Buffer
			require.NoError(t, images.WriteTarball(&out, goarch(t)))
			tarPath := filepath.Join(dir, op.name+".tar")
			require.NoError(t, os.WriteFile(tarPath, out.Bytes(), 0o600))

			// docker load and kind read the tag from manifest.json.
			manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(tarPath) })
			require.NoError(t, err)
			require.Len(t, manifest, 1)
			require.Equal(t, []string{op.tag}, manifest[0].RepoTags, "the tag as deploy/deployment.yaml names it, with no registry added")

			tag, err := name.NewTag(op.tag)
			require.NoError(t, err)
			img, err := tarball.ImageFromPath(tarPath, &tag)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			require.Equal(t, []string{"/" + op.name}, cfg.Config.Entrypoint)
			require.Empty(t, cfg.Config.Cmd)
			require.Equal(t, "65532:65532", cfg.Config.User)
			require.Equal(t, "/", cfg.Config.WorkingDir)
			require.Empty(t, cfg.Config.Env, "no PATH: there is nothing to search for")
			require.Equal(t, "linux", cfg.OS)
			require.Equal(t, goarch(t), cfg.Architecture)

			// One layer, ours: the binary beside the base's files.
			layers, err := img.Layers()
			require.NoError(t, err)
			require.Len(t, layers, 1, "one layer: the base's files and the binary")
			require.Len(t, cfg.RootFS.DiffIDs, 1)
			files := layerFiles(t, layers[0])
			f, ok := files[op.name]
			require.True(t, ok, "the layer holds /%s", op.name)
			require.Equal(t, byte(tar.TypeReg), f.hdr.Typeflag)
			require.Equal(t, int64(0o755), f.hdr.Mode)
			require.Equal(t, 65532, f.hdr.Uid)
			require.Equal(t, 65532, f.hdr.Gid)
			require.True(t, bytes.Equal(binary, f.content), "the layer's file is the binary")
			requireStatic(t, f.content)
			for name := range files {
				require.False(t, strings.HasPrefix(name, "bin/") || strings.HasPrefix(name, "usr/") || strings.HasPrefix(name, "lib"), "no shell, no libc: %s", name)
			}

			// Run what the image holds, as a container runtime would: its
			// entrypoint, with nothing in its environment.
			root := extract(t, files)
			var stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), filepath.Join(root, op.name))
			cmd.Env = []string{}
			cmd.Dir = root
			cmd.Stderr = &stderr
			err = cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
			require.Equal(t, 78, exit.ExitCode(), "stderr: %s", stderr.String())
			for _, v := range op.missing {
				require.Regexp(t, regexp.MustCompile(`\b`+v+`\b`), stderr.String(), "the error names %s", v)
			}

			requireReachesHTTPS(t, root, op.name)
		})
	}
}

// TestBuildIsReproducible shows the same inputs build the same images,
// byte for byte: the docker save tarball of each architecture and every
// file of the OCI layout, so rebuilding an unchanged operator changes
// nothing that kind or a registry has.
func TestBuildIsReproducible(t *testing.T) {
	spec := image.Spec{
		Name: "op", Tag: "op:dev",
		Binaries: [][]byte{fakeELF(elf.EM_AARCH64, ""), fakeELF(elf.EM_X86_64, "")},
		Labels:   image.Labels{Source: "https://github.com/loam-dev/loam", Revision: "0f10bd1", Version: "v0.1.0"},
	}
	var digests [2]v1.Hash
	var tarballs [2][]byte
	var layouts [2]map[string][]byte
	for i := range 2 {
		images, err := image.Build(spec)
		require.NoError(t, err)
		digests[i], err = images.Index.Digest()
		require.NoError(t, err)
		var b bytes.Buffer
		require.NoError(t, images.WriteTarball(&b, "arm64"))
		tarballs[i] = b.Bytes()
		dir := filepath.Join(t.TempDir(), "op.oci")
		require.NoError(t, images.WriteLayout(dir))
		layouts[i] = readTree(t, dir)
	}
	require.Equal(t, digests[0], digests[1])
	require.True(t, bytes.Equal(tarballs[0], tarballs[1]), "the same tarball")
	require.Equal(t, layouts[0], layouts[1], "the same layout, file for file")
	require.Contains(t, layouts[0], "index.json")
	require.Contains(t, layouts[0], "blobs/sha256/"+digests[0].Hex, "the index is a blob of the layout")

	other := spec
	other.Labels.Revision = "7c7e232"
	images, err := image.Build(other)
	require.NoError(t, err)
	d, err := images.Index.Digest()
	require.NoError(t, err)
	require.NotEqual(t, digests[0], d, "the labels are part of the image")
}

// TestBuildMistakes shows Build reports every mistake in a Spec at once,
// each naming its field.
func TestBuildMistakes(t *testing.T) {
	static := [][]byte{fakeELF(elf.EM_X86_64, "")}
	tests := []struct {
		name string
		spec image.Spec
		want []string
	}{
		{"no name", image.Spec{Tag: "op:dev", Binaries: static}, []string{"name: empty"}},
		{"a path for a name", image.Spec{Name: "bin/op", Tag: "op:dev", Binaries: static}, []string{`name "bin/op": not one path element`}},
		{"dot dot", image.Spec{Name: "..", Tag: "op:dev", Binaries: static}, []string{`name "..": not one path element`}},
		{"a name of the base", image.Spec{Name: "tmp", Tag: "op:dev", Binaries: static}, []string{`name "tmp": a directory of the base`}},
		{"no tag", image.Spec{Name: "op", Binaries: static}, []string{"tag: empty"}},
		{"a repository alone", image.Spec{Name: "op", Tag: "op", Binaries: static}, []string{`tag "op": names no tag, such as op:dev`}},
		{"a bad tag", image.Spec{Name: "op", Tag: "Op:dev!", Binaries: static}, []string{`tag "Op:dev!"`}},
		{"not an ELF file", image.Spec{Name: "op", Tag: "op:dev", Binaries: [][]byte{[]byte("#!/bin/sh\necho hi\n")}}, []string{"binary 0: not an ELF executable"}},
		{"a dynamic binary", image.Spec{Name: "op", Tag: "op:dev", Binaries: [][]byte{fakeELF(elf.EM_X86_64, "/lib64/ld-linux-x86-64.so.2")}}, []string{"binary 0: dynamically linked: it needs the loader /lib64/ld-linux-x86-64.so.2"}},
		{"no binary", image.Spec{Name: "op", Tag: "op:dev"}, []string{"binaries: none"}},
		{"two of one architecture", image.Spec{Name: "op", Tag: "op:dev", Binaries: [][]byte{fakeELF(elf.EM_X86_64, ""), fakeELF(elf.EM_AARCH64, ""), fakeELF(elf.EM_X86_64, "")}}, []string{"binary 2: linux/amd64, as binary 0 is"}},
		{"a name longer than Linux allows", image.Spec{Name: strings.Repeat("o", 256), Tag: "op:dev", Binaries: static}, []string{`name "` + strings.Repeat("o", 256) + `": 256 bytes, longer than a Linux file name may be (255)`}},
		{"a NUL in the name", image.Spec{Name: "op\x00x", Tag: "op:dev", Binaries: static}, []string{`name "op\x00x": holds a NUL or a control character`}},
		{"every mistake at once", image.Spec{Binaries: [][]byte{[]byte("MZ")}}, []string{"name: empty", "tag: empty", "binary 0: not an ELF executable"}},
		{"a bad name with the others", image.Spec{Name: "op\n", Tag: "op", Binaries: [][]byte{[]byte("MZ")}}, []string{`name "op\n": holds a NUL or a control character`, `tag "op": names no tag`, "binary 0: not an ELF executable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := image.Build(tt.spec)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// TestStaticArchitecture shows the image's architecture is the binary's,
// as GOARCH names it, and a machine Go has no GOARCH for is reported.
func TestStaticArchitecture(t *testing.T) {
	tests := []struct {
		machine elf.Machine
		want    string
	}{
		{elf.EM_X86_64, "amd64"},
		{elf.EM_AARCH64, "arm64"},
		{elf.EM_S390, "s390x"},
		{elf.EM_RISCV, "riscv64"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			arch, err := image.Static(fakeELF(tt.machine, ""))
			require.NoError(t, err)
			require.Equal(t, tt.want, arch)

			images, err := image.Build(image.Spec{Name: "op", Tag: "op:dev", Binaries: [][]byte{fakeELF(tt.machine, "")}})
			require.NoError(t, err)
			require.Equal(t, []string{tt.want}, images.Architectures())
			cfg, err := images.ByArch[tt.want].ConfigFile()
			require.NoError(t, err)
			require.Equal(t, tt.want, cfg.Architecture)
		})
	}
	_, err := image.Static(fakeELF(elf.EM_SPARCV9, ""))
	require.ErrorContains(t, err, "built for the machine EM_SPARCV9, which no GOARCH names")
}

// TestDeployImages requires that each example's deployment runs the image
// make image tags, that its kustomization's images entry names it, and
// that the Makefile's image target writes it to bin/.
func TestDeployImages(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	require.NoError(t, err)
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			var deployment struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Image string `json:"image"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			b, err := os.ReadFile(filepath.Join(op.dir, "deploy", "deployment.yaml"))
			require.NoError(t, err)
			require.NoError(t, sigsyaml.Unmarshal(b, &deployment))
			containers := deployment.Spec.Template.Spec.Containers
			require.Len(t, containers, 1)
			require.Equal(t, op.tag, containers[0].Image)

			var kustomization struct {
				Images []struct {
					Name    string `json:"name"`
					NewName string `json:"newName"`
					NewTag  string `json:"newTag"`
				} `json:"images"`
			}
			b, err = os.ReadFile(filepath.Join(op.dir, "deploy", "kustomization.yaml"))
			require.NoError(t, err)
			require.NoError(t, sigsyaml.Unmarshal(b, &kustomization))
			require.Len(t, kustomization.Images, 1)
			repo, ver, _ := strings.Cut(op.tag, ":")
			require.Equal(t, repo, kustomization.Images[0].Name, "the entry matches the deployment's image")
			require.Equal(t, op.tag, kustomization.Images[0].NewName+":"+kustomization.Images[0].NewTag)
			require.Equal(t, ver, kustomization.Images[0].NewTag)

			for _, want := range []string{
				"-o ../bin/linux_$$arch/" + op.name + " " + op.pkg,
				"$(foreach a,$(IMAGE_ARCHS),-binary ../bin/linux_$(a)/" + op.name + ") -tag " + op.tag + " -out ../bin/" + op.name + ".tar -oci ../bin/" + op.name + ".oci $(IMAGE_LABELS)",
				"IMAGE_ARCHS := amd64 arm64",
			} {
				require.Contains(t, string(makefile), want, "make image builds %s", op.tag)
			}
		})
	}
}

// buildStatic builds the examples module's package pkg as make image
// does, static for Linux, into out, reusing the Go build cache, and
// returns out.
func buildStatic(t *testing.T, pkg, out string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags=-s", "-o", out, pkg)
	cmd.Dir = ".." // the examples module
	// The environment go test runs in, for its toolchain and caches.
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s: %s", pkg, b)
	return out
}

// goarch is the architecture go build targets here, as go env says.
func goarch(t *testing.T) string {
	t.Helper()
	b, err := exec.CommandContext(t.Context(), "go", "env", "GOARCH").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// requireStatic requires that binary is an ELF executable with no program
// interpreter and no shared library it needs, read with debug/elf here
// rather than by package image.
func requireStatic(t *testing.T, binary []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(binary))
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no PT_INTERP")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "a static binary has no DT_NEEDED")
}

// file is one entry of a layer: its header and content.
type file struct {
	hdr     *tar.Header
	content []byte
}

// layerFiles returns every entry of l's uncompressed tar by its name,
// with no leading "/" or "./"; a directory's ends in "/". An entry twice
// fails the test.
func layerFiles(t *testing.T, l v1.Layer) map[string]file {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		name := strings.TrimPrefix(strings.TrimPrefix(hdr.Name, "./"), "/")
		require.NotContains(t, files, name, "an entry twice")
		files[name] = file{hdr: hdr, content: content}
	}
}

// fakeELF returns a minimal 64-bit little-endian Linux executable header
// for machine: no sections, and a PT_INTERP naming interp unless it is "".
// It runs nowhere; it is what debug/elf reads.
func fakeELF(machine elf.Machine, interp string) []byte {
	var progs []elf.Prog64
	const headers = 64 + 56 // one ELF header, at most one program header
	if interp != "" {
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Off: headers, Filesz: uint64(len(interp) + 1), Memsz: uint64(len(interp) + 1), Align: 1})
	}
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Phoff:     64,
		Ehsize:    64,
		Phentsize: 56,
		Phnum:     uint16(len(progs)),
		Shentsize: 64,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, hdr)
	for _, p := range progs {
		_ = binary.Write(&b, binary.LittleEndian, p)
	}
	if interp != "" {
		b.WriteString(interp + "\x00")
	}
	return b.Bytes()
}

// TestBuildALongName shows a binary's name longer than a tar header's
// 100 bytes, up to Linux's 255, is written with a PAX record, and the
// layer's other entries stay USTAR's.
func TestBuildALongName(t *testing.T) {
	name := strings.Repeat("long-operator-", 15) + "x" // 211 bytes
	images, err := image.Build(image.Spec{Name: name, Tag: "op:dev", Binaries: [][]byte{fakeELF(elf.EM_X86_64, "")}})
	require.NoError(t, err)
	layers, err := images.ByArch["amd64"].Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	tr := tar.NewReader(rc)
	formats := map[string]tar.Format{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		formats[hdr.Name] = hdr.Format
	}
	require.Contains(t, formats, name, "the binary, by its whole name")
	require.Equal(t, tar.FormatPAX, formats[name])
	require.Equal(t, tar.FormatUSTAR, formats["etc/passwd"])
}
