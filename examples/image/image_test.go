package image_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
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
		{"every mistake at once", image.Spec{Binaries: [][]byte{[]byte("MZ")}}, []string{"name: empty", "tag: empty", "binary 0: not an ELF executable"}},
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

// TestDockerfiles parses each example's Dockerfile and requires that its
// last stage builds what make image builds: distroless/static's files
// (what make image's base copies), the binary copied owned by 65532 to
// the entrypoint's path, the same user, working directory and
// entrypoint, in exec form (a shell form needs /bin/sh, which the image
// has not); that both bases are pinned by digest; that its build stage
// runs on the builder's platform and cross-compiles the operator's
// package, static, for the target's; and that a Dockerfile.dockerignore
// beside it lets only the Go modules' sources into the context.
func TestDockerfiles(t *testing.T) {
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			df := parseDockerfile(t, filepath.Join(op.dir, "Dockerfile"))
			require.GreaterOrEqual(t, len(df.stages), 2, "a build stage and the image's")
			build, final := df.stages[len(df.stages)-2], df.stages[len(df.stages)-1]

			images, err := image.Build(image.Spec{Name: op.name, Tag: op.tag, Binaries: [][]byte{fakeELF(elf.EM_X86_64, "")}})
			require.NoError(t, err)
			cfg, err := images.ByArch["amd64"].ConfigFile()
			require.NoError(t, err)

			for _, s := range df.stages {
				require.Regexp(t, pinned, s.from, "every base pinned by digest, its tag saying what it is")
			}
			require.True(t, strings.HasPrefix(final.from, "gcr.io/distroless/static-"), "the image's base is distroless/static, whose files make image copies: %s", final.from)
			require.Contains(t, final.from, ":nonroot@", "the nonroot variant, user 65532")
			require.Empty(t, final.platform, "the image's stage is the target platform's")
			require.Empty(t, final.others, "nothing in the image's config that make image's has not")
			require.Equal(t, cfg.Config.User, final.user)
			require.Equal(t, cfg.Config.WorkingDir, final.workdir)
			require.Equal(t, cfg.Config.Entrypoint, final.entrypoint, "ENTRYPOINT in exec form, as make image's")
			require.Len(t, final.copies, 1, "one COPY: the binary")
			cp := final.copies[0]
			require.Equal(t, build.name, cp.from, "the binary comes from the build stage")
			require.Equal(t, cfg.Config.User, cp.chown)
			require.Equal(t, cfg.Config.Entrypoint[0], cp.dest)
			require.Equal(t, "/out/"+op.name, cp.src)

			require.Equal(t, "$BUILDPLATFORM", build.platform, "the build stage runs on the builder's platform and cross-compiles")
			require.Subset(t, build.args, []string{"TARGETOS", "TARGETARCH"}, "the target's platform, which BuildKit sets")
			require.Len(t, build.runs, 1)
			run := build.runs[0]
			for _, want := range []string{"CGO_ENABLED=0", "GOOS=$TARGETOS", "GOARCH=$TARGETARCH", "go build", "-trimpath", "-o /out/" + op.name + " " + op.pkg} {
				require.Contains(t, run, want)
			}

			ignore := readIgnore(t, filepath.Join(op.dir, "Dockerfile.dockerignore"))
			require.NotEmpty(t, ignore)
			require.Equal(t, "**", ignore[0], "everything is left out, then what go build reads let in")
			for _, p := range ignore[1:] {
				if rest, ok := strings.CutPrefix(p, "!"); ok {
					require.True(t, strings.HasSuffix(rest, "go.mod") || strings.HasSuffix(rest, "go.sum") || strings.HasSuffix(rest, ".go"), "only Go sources let in: %s", p)
				}
			}
		})
	}
}

// readIgnore returns path's patterns, without comments and blank lines.
func readIgnore(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "a .dockerignore for the Dockerfile, whose context is the repository's root")
	var patterns []string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	return patterns
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

// dockerfile is what the test reads of a Dockerfile: its stages.
type dockerfile struct {
	stages []stage
}

// stage is one FROM of a Dockerfile and what follows it.
type stage struct {
	from, name string
	// platform is FROM's --platform.
	platform string
	// args are the ARGs the stage declares.
	args          []string
	user, workdir string
	entrypoint    []string
	copies        []copyInstruction
	runs          []string
	// others are the instructions the test compares with nothing: the
	// image's stage must have none, as make image's config has none of
	// what they set.
	others []string
}

// copyInstruction is a COPY: its --from and --chown, one source and the
// destination.
type copyInstruction struct {
	from, chown, src, dest string
}

// parseDockerfile reads path's instructions, with their line
// continuations joined and comments dropped: a line parser enough for the
// examples' Dockerfiles, which fails the test on what it doesn't know.
func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var lines []string
	var cont strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cont.Len() == 0) {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cont.WriteString(rest + " ")
			continue
		}
		cont.WriteString(line)
		lines = append(lines, cont.String())
		cont.Reset()
	}
	require.NoError(t, sc.Err())
	require.Zero(t, cont.Len(), "%s ends in a continuation", path)

	var df dockerfile
	for _, line := range lines {
		instr, args, _ := strings.Cut(line, " ")
		args = strings.TrimSpace(args)
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			f := strings.Fields(args)
			var platform string
			if p, ok := strings.CutPrefix(f[0], "--platform="); ok {
				platform, f = p, f[1:]
			}
			require.NotEmpty(t, f, "%s: FROM with no image", path)
			require.False(t, strings.HasPrefix(f[0], "--"), "%s: FROM flag %s: unknown to this parser", path, f[0])
			s := stage{from: f[0], platform: platform}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			df.stages = append(df.stages, s)
			continue
		}
		require.NotEmpty(t, df.stages, "%s: %s before any FROM", path, instr)
		s := &df.stages[len(df.stages)-1]
		switch instr {
		case "USER":
			s.user = args
		case "WORKDIR":
			s.workdir = args
		case "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(args), &s.entrypoint), "%s: ENTRYPOINT %s is not in exec form: a JSON array", path, args)
		case "RUN":
			s.runs = append(s.runs, args)
		case "ARG":
			s.args = append(s.args, strings.Fields(args)...)
		case "COPY":
			var c copyInstruction
			var paths []string
			for _, f := range strings.Fields(args) {
				switch {
				case strings.HasPrefix(f, "--from="):
					c.from = strings.TrimPrefix(f, "--from=")
				case strings.HasPrefix(f, "--chown="):
					c.chown = strings.TrimPrefix(f, "--chown=")
				case strings.HasPrefix(f, "--"):
					t.Fatalf("%s: COPY flag %s: unknown to this parser", path, f)
				default:
					paths = append(paths, f)
				}
			}
			if len(paths) == 2 {
				c.src, c.dest = paths[0], paths[1]
			}
			s.copies = append(s.copies, c)
		case "CMD", "ENV", "SHELL", "LABEL", "EXPOSE", "VOLUME", "ADD", "ONBUILD", "HEALTHCHECK", "STOPSIGNAL":
			s.others = append(s.others, line)
		default:
			t.Fatalf("%s: instruction %s: unknown to this parser", path, instr)
		}
	}
	return df
}
