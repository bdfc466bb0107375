// Package image builds the container image of an example operator without
// a Docker daemon and without a registry: one static Linux binary per
// architecture, owned by and run as the non-root user 65532, on a base
// that holds what distroless/static holds and nothing more (the CA
// certificates, a user database, /home/nonroot and a /tmp of mode 1777;
// no shell, no libc). `make image` runs it through examples/cmd/image for
// each operator, for linux/amd64 and linux/arm64.
//
// It writes two things from the same images. An OCI image layout (a
// directory with oci-layout, index.json and blobs/sha256), whose
// index.json names one image index with an image per architecture: what
// a registry client (crane, skopeo, oras, regctl) pushes. And a tarball
// of one architecture in the format `docker save` writes (a manifest.json
// naming the tag, the config and the gzipped layer): what a Docker older
// than 25 loads, and `kind load image-archive` reads.
//
// The bytes depend on the inputs alone (the binaries, the tag, the
// labels and the pinned CA bundle): entries sorted, every time fixed,
// owners numeric, no build date. The same inputs make the same digests.
package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID and GID are the user and group the binary belongs to and runs as:
// 65532, the "nonroot" user of distroless images, which no base image
// gives a shell or a login. /etc/passwd names it, but the image's User is
// numeric, which is what a pod's runAsNonRoot needs to check it.
const (
	UID = 65532
	GID = 65532
)

// User is the image config's User: UID:GID.
const User = "65532:65532"

// WorkingDir is the image config's working directory, the root.
const WorkingDir = "/"

// OS is the only operating system an image is built for: a Kubernetes
// node's.
const OS = "linux"

// The OCI annotations (on the index and each manifest) and labels (in
// each config) Labels sets.
const (
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationVersion  = "org.opencontainers.image.version"
	// AnnotationRefName names the image in the layout's index.json by its
	// tag, as docker save's OCI output does; AnnotationContainerdName by
	// its whole reference, which containerd's import reads.
	AnnotationRefName        = "org.opencontainers.image.ref.name"
	AnnotationContainerdName = "io.containerd.image.name"
)

// Labels are the OCI annotations and labels of an image: where its
// source is, which revision and which version. An empty one is left out.
type Labels struct {
	// Source is the URL of the source repository.
	Source string
	// Revision is the source's revision, such as a commit's hash.
	Revision string
	// Version is the version of what the image packages.
	Version string
}

// annotations returns l as annotations, leaving out the empty ones, or
// nil if all are.
func (l Labels) annotations() map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{AnnotationSource: l.Source, AnnotationRevision: l.Revision, AnnotationVersion: l.Version} {
		if v != "" {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Spec is the image of one program, built for one or more architectures.
type Spec struct {
	// Name is the binary's file name in the image, at /Name, whose path is
	// the entrypoint: memcached-operator. It is one path element, and not
	// one the base holds (etc, home, root, tmp).
	Name string
	// Tag names the image, as docker load and kind see it:
	// memcached-operator:dev, the image that deploy/deployment.yaml runs.
	Tag string
	// Binaries are the executables, one per architecture: statically
	// linked Linux ELF files, as CGO_ENABLED=0 go build writes for
	// GOOS=linux. Each image's architecture is its binary's.
	Binaries [][]byte
	// Labels are the images' OCI labels and annotations.
	Labels Labels
}

// Images are the built images of a Spec.
type Images struct {
	// Tag is the Spec's Tag.
	Tag name.Tag
	// Index is the image index: one image per architecture, in the order
	// of their GOARCH names, each with its platform.
	Index v1.ImageIndex
	// ByArch are the images by GOARCH: amd64, arm64.
	ByArch map[string]v1.Image
}

// Architectures returns the images' architectures, sorted.
func (im *Images) Architectures() []string {
	return slices.Sorted(maps.Keys(im.ByArch))
}

// Entrypoint is the image config's Entrypoint for a binary named name:
// its path in the image, run with no shell.
func Entrypoint(name string) []string {
	return []string{"/" + name}
}

// Build returns the images of spec: for each binary, the OCI image of one
// layer holding the binary at /Name, mode 0755, owned by UID:GID, beside
// the base's files (see layer), and a config whose entrypoint is the
// binary, whose user is User, whose working directory is WorkingDir, with
// no environment, the binary's architecture and spec's labels; and the
// index of them all. Build reports every mistake in spec at once: a Name
// that is not one path element, is one of the base's, is longer than 255
// bytes or holds a control character, a Tag that is not
// a tag, a binary that is not a static Linux executable, none at all, or
// two of one architecture.
func Build(spec Spec) (*Images, error) {
	tag, archs, err := check(spec)
	if err != nil {
		return nil, err
	}
	certs, err := CACertificates()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Tag, err)
	}
	im := &Images{Tag: tag, ByArch: map[string]v1.Image{}}
	annotations := spec.Labels.annotations()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	if annotations != nil {
		idx = mutate.Annotations(idx, annotations).(v1.ImageIndex)
	}
	order := make([]int, len(archs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(archs[a], archs[b]) })
	for _, i := range order {
		img, err := build(spec, archs[i], spec.Binaries[i], certs)
		if err != nil {
			return nil, fmt.Errorf("image %s (%s/%s): %w", spec.Tag, OS, archs[i], err)
		}
		im.ByArch[archs[i]] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: OS, Architecture: archs[i]}},
		})
	}
	im.Index = idx
	return im, nil
}

// build returns the image of one binary of arch.
func build(spec Spec, arch string, binary, certs []byte) (v1.Image, error) {
	layerTar, err := layer(spec.Name, binary, certs)
	if err != nil {
		return nil, fmt.Errorf("the layer of /%s: %w", spec.Name, err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressedCaching, // gzip the binary once, not once for the digest and again to write it
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("the layer of /%s: %w", spec.Name, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	baseCfg, err := base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("the empty base's config: %w", err)
	}
	cfg := baseCfg.DeepCopy()
	cfg.OS = OS
	cfg.Architecture = arch
	cfg.Config = v1.Config{
		Entrypoint: Entrypoint(spec.Name),
		User:       User,
		WorkingDir: WorkingDir,
		Labels:     spec.Labels.annotations(),
	}
	img, err := mutate.ConfigFile(base, cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     l,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "examples/image: COPY " + spec.Name + " /" + spec.Name, Comment: "a static binary, CA certificates, /etc/passwd, /tmp; no shell"},
	})
	if err != nil {
		return nil, fmt.Errorf("the layer of /%s: %w", spec.Name, err)
	}
	if a := spec.Labels.annotations(); a != nil {
		img = mutate.Annotations(img, a).(v1.Image)
	}
	return img, nil
}

// WriteTarball writes the image of arch to w as a tarball of docker
// save's format, tagged im.Tag. It returns an error naming the
// architectures there are if there is no image of arch, or the writer's.
func (im *Images) WriteTarball(w io.Writer, arch string) error {
	img, ok := im.ByArch[arch]
	if !ok {
		return fmt.Errorf("image %s: no image for %s/%s, only for %s", im.Tag, OS, arch, strings.Join(im.Architectures(), ", "))
	}
	if err := tarball.Write(im.Tag, img, w); err != nil {
		return fmt.Errorf("image %s: writing the tarball: %w", im.Tag, err)
	}
	return nil
}

// WriteLayout writes the images as an OCI image layout in the directory
// dir, replacing whatever dir held: oci-layout, blobs/sha256, and an
// index.json naming im.Index by the tag (AnnotationRefName) and the whole
// reference (AnnotationContainerdName); every file 0644 and directory
// 0755, whatever the umask. It writes a directory beside dir
// first and renames it, so dir never holds a partial layout; it returns
// the error of writing or renaming, with nothing left behind.
func (im *Images) WriteLayout(dir string) (err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+".*")
	if err != nil {
		return fmt.Errorf("image %s: the layout %s: %w", im.Tag, dir, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	top := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: im.Index,
		Descriptor: v1.Descriptor{Annotations: map[string]string{
			AnnotationRefName:        im.Tag.TagStr(),
			AnnotationContainerdName: fullName(im.Tag),
		}},
	})
	if _, err := layout.Write(tmp, top); err != nil {
		return fmt.Errorf("image %s: the layout %s: %w", im.Tag, dir, err)
	}
	if err := readableByAll(tmp); err != nil {
		return fmt.Errorf("image %s: the layout %s: %w", im.Tag, dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image %s: the layout %s: %w", im.Tag, dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("image %s: the layout %s: %w", im.Tag, dir, err)
	}
	return nil
}

// readableByAll sets the mode of every file under dir to 0644 and of every
// directory to 0755, whatever the umask and go-containerregistry chose:
// it writes each layer through a temporary file of mode 0600, and
// index.json with the executable bits, so a registry client or daemon run
// as another user could read the manifests but not the layers.
func readableByAll(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(path, mode) //nolint:gosec // a layout others read, as make's outputs
	})
}

// fullName returns tag as containerd and docker save name it:
// docker.io/library/memcached-operator:dev for memcached-operator:dev.
func fullName(tag name.Tag) string {
	reg := tag.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// maxName is the longest name, in bytes, a Linux file system gives a file
// (NAME_MAX).
const maxName = 255

// check reports every mistake in spec at once, and returns the tag and
// each binary's architecture, as GOARCH names it.
func check(spec Spec) (name.Tag, []string, error) {
	var errs []error
	switch {
	case spec.Name == "":
		errs = append(errs, errors.New("name: empty"))
	case strings.ContainsAny(spec.Name, "/\\") || spec.Name == "." || spec.Name == "..":
		errs = append(errs, fmt.Errorf("name %q: not one path element", spec.Name))
	case slices.Contains(reserved, spec.Name):
		errs = append(errs, fmt.Errorf("name %q: a directory of the base (%s)", spec.Name, strings.Join(reserved, ", ")))
	case len(spec.Name) > maxName:
		errs = append(errs, fmt.Errorf("name %q: %d bytes, longer than a Linux file name may be (%d)", spec.Name, len(spec.Name), maxName))
	case strings.ContainsFunc(spec.Name, func(r rune) bool { return r < ' ' || r == 0x7f }):
		// A tar header can't carry a NUL, and a control character in
		// the entrypoint is a mistake, not a name.
		errs = append(errs, fmt.Errorf("name %q: holds a NUL or a control character", spec.Name))
	}
	var tag name.Tag
	if spec.Tag == "" {
		errs = append(errs, errors.New("tag: empty"))
	} else if t, err := name.NewTag(spec.Tag); err != nil {
		errs = append(errs, fmt.Errorf("tag %q: %w", spec.Tag, err))
	} else if !strings.HasSuffix(spec.Tag, ":"+t.TagStr()) {
		// A Deployment names its image with the tag; "latest" by default
		// would be another image.
		errs = append(errs, fmt.Errorf("tag %q: names no tag, such as %s:dev", spec.Tag, spec.Tag))
	} else {
		tag = t
	}
	if len(spec.Binaries) == 0 {
		errs = append(errs, errors.New("binaries: none"))
	}
	archs := make([]string, len(spec.Binaries))
	seen := map[string]int{}
	for i, b := range spec.Binaries {
		arch, err := Static(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("binary %d: %w", i, err))
			continue
		}
		if j, ok := seen[arch]; ok {
			errs = append(errs, fmt.Errorf("binary %d: %s/%s, as binary %d is", i, OS, arch, j))
		}
		seen[arch] = i
		archs[i] = arch
	}
	if err := errors.Join(errs...); err != nil {
		return name.Tag{}, nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	return tag, archs, nil
}
