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
// back as docker load would: the image holds the binary and nothing else,
// runs it as 65532 with no shell, and the binary, run as its entrypoint
// with an empty environment, exits 78 naming the variables it needs.
func TestOperatorImages(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := buildStatic(t, op.pkg, filepath.Join(dir, op.name))
			binary, err := os.ReadFile(bin)
			require.NoError(t, err)

			var out bytes.Buffer
			require.NoError(t, image.Write(&out, image.Spec{Name: op.name, Tag: op.tag, Binary: binary}))
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

			// The empty base: one layer, ours, holding the binary alone.
			layers, err := img.Layers()
			require.NoError(t, err)
			require.Len(t, layers, 1, "an empty base and the binary's layer")
			require.Len(t, cfg.RootFS.DiffIDs, 1)
			files := layerFiles(t, layers[0])
			require.Len(t, files, 1, "the layer holds the binary and nothing else: no /bin/sh, no /etc")
			f := files[0]
			require.Equal(t, op.name, strings.TrimPrefix(f.hdr.Name, "/"))
			require.Equal(t, byte(tar.TypeReg), f.hdr.Typeflag)
			require.Equal(t, int64(0o755), f.hdr.Mode)
			require.Equal(t, 65532, f.hdr.Uid)
			require.Equal(t, 65532, f.hdr.Gid)
			require.True(t, bytes.Equal(binary, f.content), "the layer's file is the binary")
			requireStatic(t, f.content)

			// Run what the image holds, as a container runtime would: its
			// entrypoint, with nothing in its environment.
			extracted := filepath.Join(t.TempDir(), op.name)
			require.NoError(t, os.WriteFile(extracted, f.content, 0o755))
			var stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), extracted)
			cmd.Env = []string{}
			cmd.Dir = "/"
			cmd.Stderr = &stderr
			err = cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
			require.Equal(t, 78, exit.ExitCode(), "stderr: %s", stderr.String())
			for _, v := range op.missing {
				require.Regexp(t, regexp.MustCompile(`\b`+v+`\b`), stderr.String(), "the error names %s", v)
			}
		})
	}
}

// TestBuildIsReproducible shows the same binary builds the same image,
// digest and all, so rebuilding an unchanged operator changes nothing
// that kind or a registry has.
func TestBuildIsReproducible(t *testing.T) {
	spec := image.Spec{Name: "op", Tag: "op:dev", Binary: fakeELF(elf.EM_X86_64, "")}
	digests := make([]v1.Hash, 2)
	for i := range digests {
		img, err := image.Build(spec)
		require.NoError(t, err)
		digests[i], err = img.Digest()
		require.NoError(t, err)
	}
	require.Equal(t, digests[0], digests[1])
}

// TestBuildMistakes shows Build reports every mistake in a Spec at once,
// each naming its field.
func TestBuildMistakes(t *testing.T) {
	static := fakeELF(elf.EM_X86_64, "")
	tests := []struct {
		name string
		spec image.Spec
		want []string
	}{
		{"no name", image.Spec{Tag: "op:dev", Binary: static}, []string{"name: empty"}},
		{"a path for a name", image.Spec{Name: "bin/op", Tag: "op:dev", Binary: static}, []string{`name "bin/op": not one path element`}},
		{"dot dot", image.Spec{Name: "..", Tag: "op:dev", Binary: static}, []string{`name "..": not one path element`}},
		{"no tag", image.Spec{Name: "op", Binary: static}, []string{"tag: empty"}},
		{"a repository alone", image.Spec{Name: "op", Tag: "op", Binary: static}, []string{`tag "op": names no tag, such as op:dev`}},
		{"a bad tag", image.Spec{Name: "op", Tag: "Op:dev!", Binary: static}, []string{`tag "Op:dev!"`}},
		{"not an ELF file", image.Spec{Name: "op", Tag: "op:dev", Binary: []byte("#!/bin/sh\necho hi\n")}, []string{"binary: not an ELF executable"}},
		{"a dynamic binary", image.Spec{Name: "op", Tag: "op:dev", Binary: fakeELF(elf.EM_X86_64, "/lib64/ld-linux-x86-64.so.2")}, []string{"binary: dynamically linked: it needs the loader /lib64/ld-linux-x86-64.so.2"}},
		{"every mistake at once", image.Spec{Binary: []byte("MZ")}, []string{"name: empty", "tag: empty", "binary: not an ELF executable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := image.Build(tt.spec)
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			require.ErrorContains(t, image.Write(io.Discard, tt.spec), tt.want[0], "Write reports what Build does")
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

			img, err := image.Build(image.Spec{Name: "op", Tag: "op:dev", Binary: fakeELF(tt.machine, "")})
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			require.Equal(t, tt.want, cfg.Architecture)
		})
	}
	_, err := image.Static(fakeELF(elf.EM_SPARCV9, ""))
	require.ErrorContains(t, err, "built for the machine EM_SPARCV9, which no GOARCH names")
}

// TestDockerfiles parses each example's Dockerfile and requires that its
// last stage builds what make image builds: FROM scratch, the binary
// copied owned by 65532 to the entrypoint's path, the same user, working
// directory and entrypoint, in exec form (a shell form needs /bin/sh,
// which the image has not); and that its build stage builds the
// operator's package static.
func TestDockerfiles(t *testing.T) {
	for _, op := range operators {
		t.Run(op.name, func(t *testing.T) {
			df := parseDockerfile(t, filepath.Join(op.dir, "Dockerfile"))
			require.GreaterOrEqual(t, len(df.stages), 2, "a build stage and the image's")
			build, final := df.stages[len(df.stages)-2], df.stages[len(df.stages)-1]

			img, err := image.Build(image.Spec{Name: op.name, Tag: op.tag, Binary: fakeELF(elf.EM_X86_64, "")})
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			layers, err := img.Layers()
			require.NoError(t, err)

			require.Equal(t, "scratch", final.from, "the image's base is empty")
			require.Empty(t, final.others, "nothing in the image's config that make image's has not")
			require.Len(t, layers, 1, "make image's base is empty too")
			require.Equal(t, cfg.Config.User, final.user)
			require.Equal(t, cfg.Config.WorkingDir, final.workdir)
			require.Equal(t, cfg.Config.Entrypoint, final.entrypoint, "ENTRYPOINT in exec form, as make image's")
			require.Len(t, final.copies, 1, "one COPY: the binary")
			cp := final.copies[0]
			require.Equal(t, build.name, cp.from, "the binary comes from the build stage")
			require.Equal(t, cfg.Config.User, cp.chown)
			require.Equal(t, cfg.Config.Entrypoint[0], cp.dest)
			require.Equal(t, "/out/"+op.name, cp.src)

			require.Len(t, build.runs, 1)
			run := build.runs[0]
			for _, want := range []string{"CGO_ENABLED=0", "go build", "-trimpath", "-o /out/" + op.name + " " + op.pkg} {
				require.Contains(t, run, want)
			}
		})
	}
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
				"-o ../bin/" + op.name + " " + op.pkg,
				"-binary ../bin/" + op.name + " -tag " + op.tag + " -out ../bin/" + op.name + ".tar",
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

// layerFiles returns every entry of l's uncompressed tar.
func layerFiles(t *testing.T, l v1.Layer) []file {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer func() { require.NoError(t, rc.Close()) }()
	var files []file
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		require.NoError(t, err)
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		files = append(files, file{hdr: hdr, content: content})
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
	from, name    string
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
			s := stage{from: f[0]}
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
		case "CMD", "ENV", "SHELL", "ARG", "LABEL", "EXPOSE", "VOLUME", "ADD", "ONBUILD", "HEALTHCHECK", "STOPSIGNAL":
			s.others = append(s.others, line)
		default:
			t.Fatalf("%s: instruction %s: unknown to this parser", path, instr)
		}
	}
	return df
}
