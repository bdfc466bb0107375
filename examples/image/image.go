// Package image builds the container image of an example operator without
// a Docker daemon and without a registry: one static Linux binary on an
// empty base, owned by and run as the non-root user 65532, with no shell
// and no other file, written as a tarball that `docker load` and
// `kind load image-archive` both read. `make image` runs it through
// examples/cmd/image for each operator.
//
// The tarball is the one `docker save` writes (a manifest.json naming the
// tag, the config and the gzipped layer), not an OCI image layout: a
// Docker older than 25 loads only the former, and kind, which pipes the
// file into containerd's `ctr images import`, reads either.
package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// UID and GID are the user and group the binary belongs to and runs as:
// 65532, the "nonroot" user of distroless images, which no base image
// gives a shell or a login. The image has no /etc/passwd, so the user is
// numeric, which is also what a pod's runAsNonRoot needs to check it.
const (
	UID = 65532
	GID = 65532
)

// User is the image config's User: UID:GID.
const User = "65532:65532"

// WorkingDir is the image config's working directory, the root: the only
// directory there is.
const WorkingDir = "/"

// OS is the only operating system an image is built for: a Kubernetes
// node's.
const OS = "linux"

// Spec is the image of one binary.
type Spec struct {
	// Name is the binary's file name in the image, at /Name, whose path is
	// the entrypoint: memcached-operator. It is one path element.
	Name string
	// Tag names the image in the tarball, as docker load and kind see it:
	// memcached-operator:dev, the image that deploy/deployment.yaml runs.
	Tag string
	// Binary is the executable: a statically linked Linux ELF file, as
	// CGO_ENABLED=0 go build writes for GOOS=linux. The image's
	// architecture is the binary's.
	Binary []byte
}

// Entrypoint is the image config's Entrypoint for a binary named name:
// its path in the image, run with no shell.
func Entrypoint(name string) []string {
	return []string{"/" + name}
}

// Build returns the image of spec: the empty base, one layer holding the
// binary at /Name, mode 0755, owned by UID:GID, and a config whose
// entrypoint is the binary, whose user is User, whose working directory is
// WorkingDir, with no environment (there is no PATH to search: there is
// nothing else to run) and the binary's architecture. The image's
// content depends on spec alone, so the same binary builds the same
// image, digest and all. Build reports every mistake in spec at once: a
// Name that is not one path element, a Tag that is not a tag, and a
// Binary that is not a static Linux executable.
func Build(spec Spec) (v1.Image, error) {
	arch, err := check(spec)
	if err != nil {
		return nil, err
	}
	layerTar, err := layer(spec.Name, spec.Binary)
	if err != nil {
		return nil, fmt.Errorf("image %s: the layer of /%s: %w", spec.Tag, spec.Name, err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressedCaching) // gzip the binary once, not once for the digest and again to write it
	if err != nil {
		return nil, fmt.Errorf("image %s: the layer of /%s: %w", spec.Tag, spec.Name, err)
	}

	base, err := empty.Image.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: the empty base's config: %w", spec.Tag, err)
	}
	cfg := base.DeepCopy()
	cfg.OS = OS
	cfg.Architecture = arch
	cfg.Config = v1.Config{
		Entrypoint: Entrypoint(spec.Name),
		User:       User,
		WorkingDir: WorkingDir,
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, fmt.Errorf("image %s: config: %w", spec.Tag, err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   l,
		History: v1.History{CreatedBy: "examples/image: COPY " + spec.Name + " /" + spec.Name, Comment: "a static binary, no shell"},
	})
	if err != nil {
		return nil, fmt.Errorf("image %s: the layer of /%s: %w", spec.Tag, spec.Name, err)
	}
	return img, nil
}

// Write builds the image of spec, as Build does, and writes it to w as a
// tarball of docker save's format, tagged spec.Tag. It returns Build's
// error, or the writer's.
func Write(w io.Writer, spec Spec) error {
	img, err := Build(spec)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(spec.Tag)
	if err != nil { // Build checked it
		return fmt.Errorf("image %s: tag: %w", spec.Tag, err)
	}
	if err := tarball.Write(tag, img, w); err != nil {
		return fmt.Errorf("image %s: writing the tarball: %w", spec.Tag, err)
	}
	return nil
}

// check reports every mistake in spec at once, and returns the binary's
// architecture, as GOARCH names it.
func check(spec Spec) (string, error) {
	var errs []error
	switch {
	case spec.Name == "":
		errs = append(errs, errors.New("name: empty"))
	case strings.ContainsAny(spec.Name, "/\\") || spec.Name == "." || spec.Name == "..":
		errs = append(errs, fmt.Errorf("name %q: not one path element", spec.Name))
	}
	if spec.Tag == "" {
		errs = append(errs, errors.New("tag: empty"))
	} else if t, err := name.NewTag(spec.Tag); err != nil {
		errs = append(errs, fmt.Errorf("tag %q: %w", spec.Tag, err))
	} else if !strings.HasSuffix(spec.Tag, ":"+t.TagStr()) {
		// A Deployment names its image with the tag; "latest" by default
		// would be another image.
		errs = append(errs, fmt.Errorf("tag %q: names no tag, such as %s:dev", spec.Tag, spec.Tag))
	}
	arch, err := Static(spec.Binary)
	if err != nil {
		errs = append(errs, fmt.Errorf("binary: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("image %s: %w", spec.Name, err)
	}
	return arch, nil
}

// Static checks that binary is an executable a scratch image can run: a
// Linux ELF file with no program interpreter (no dynamic loader to load
// it) and no shared library it needs. It returns the binary's
// architecture as GOARCH names it, and an error naming what the binary
// needs otherwise, or that it is no ELF file at all.
func Static(binary []byte) (string, error) {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return "", fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	var errs []error
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		errs = append(errs, fmt.Errorf("an ELF file of type %s, not an executable", f.Type))
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		errs = append(errs, fmt.Errorf("built for %s, not Linux", f.OSABI))
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(io.LimitReader(p.Open(), 256))
			errs = append(errs, fmt.Errorf("dynamically linked: it needs the loader %s, which an empty image lacks (build it with CGO_ENABLED=0)", strings.TrimRight(string(interp), "\x00")))
		}
	}
	// A binary without a dynamic section has no DT_NEEDED; any other
	// error is the file's.
	if libs, err := f.ImportedLibraries(); err != nil {
		errs = append(errs, fmt.Errorf("its dynamic section: %w", err))
	} else if len(libs) > 0 {
		errs = append(errs, fmt.Errorf("dynamically linked: it needs %s (build it with CGO_ENABLED=0)", strings.Join(libs, ", ")))
	}
	arch, ok := goarch(f)
	if !ok {
		errs = append(errs, fmt.Errorf("built for the machine %s, which no GOARCH names", f.Machine))
	}
	return arch, errors.Join(errs...)
}

// goarch returns the GOARCH of f's machine, and false for one Go doesn't
// build Linux binaries for.
func goarch(f *elf.File) (string, bool) {
	little := f.Data == elf.ELFDATA2LSB
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", true
	case elf.EM_AARCH64:
		return "arm64", true
	case elf.EM_386:
		return "386", true
	case elf.EM_ARM:
		return "arm", true
	case elf.EM_PPC64:
		if little {
			return "ppc64le", true
		}
		return "ppc64", true
	case elf.EM_S390:
		return "s390x", true
	case elf.EM_RISCV:
		return "riscv64", true
	case elf.EM_LOONGARCH:
		return "loong64", true
	case elf.EM_MIPS:
		switch {
		case f.Class == elf.ELFCLASS64 && little:
			return "mips64le", true
		case f.Class == elf.ELFCLASS64:
			return "mips64", true
		case little:
			return "mipsle", true
		default:
			return "mips", true
		}
	}
	return "", false
}

// layer returns the uncompressed tar of the image's one layer: the binary
// at /name, mode 0755, owned by UID:GID, with a fixed time so that the same
// binary makes the same layer.
func layer(name string, binary []byte) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Uid:      UID,
		Gid:      GID,
		Size:     int64(len(binary)),
		ModTime:  time.Unix(0, 0),
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
