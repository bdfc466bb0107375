// Command image writes the container images of a static binary built for
// one or more architectures, as package image builds them: an OCI image
// layout of them all, and a tarball of one in docker save's format, which
// `docker load` and `kind load image-archive` read. No Docker daemon, no
// registry. make image runs it for each example operator:
//
//	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags=-s -o bin/linux_amd64/memcached-operator ./memcached/cmd/memcached
//	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -ldflags=-s -o bin/linux_arm64/memcached-operator ./memcached/cmd/memcached
//	go run ./cmd/image -binary bin/linux_amd64/memcached-operator -binary bin/linux_arm64/memcached-operator \
//		-tag memcached-operator:dev -out bin/memcached-operator.tar -oci bin/memcached-operator.oci \
//		-source https://github.com/loam-dev/loam -revision "$(git rev-parse HEAD)" -version dev
//
// It exits 2 for a flag that is missing, and 1 when the images can't be
// built or written, naming every mistake.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/loam-dev/loam/examples/image"
)

// Options are the command's flags.
type Options struct {
	// Binaries are the paths of the static binaries to put in the images,
	// one per architecture.
	Binaries []string
	// Name is the binary's file name in the image, and so its entrypoint
	// /Name; the file name of the first binary when empty.
	Name string
	// Tag names the image: the image that deploy/deployment.yaml runs.
	Tag string
	// Out is the path of the docker save tarball to write.
	Out string
	// OCI is the directory of the OCI image layout to write; Out without
	// its .tar, and .oci, when empty.
	OCI string
	// Arch is the architecture of the image in Out, as GOARCH names it:
	// the one binary's, or with several, this machine's (runtime.GOARCH),
	// when empty.
	Arch string
	// Labels are the images' OCI labels and annotations.
	Labels image.Labels
}

// binaries is the repeatable -binary flag.
type binaries []string

func (b *binaries) String() string { return strings.Join(*b, ",") }

func (b *binaries) Set(v string) error {
	*b = append(*b, v)
	return nil
}

func main() {
	var opts Options
	flag.Var((*binaries)(&opts.Binaries), "binary", "a static Linux binary to put in an image, one per architecture; repeat it for each (required)")
	flag.StringVar(&opts.Name, "name", "", "the binary's name in the image, whose entrypoint is /NAME (default: the first binary's file name)")
	flag.StringVar(&opts.Tag, "tag", "", "the image's tag, such as memcached-operator:dev (required)")
	flag.StringVar(&opts.Out, "out", "", "the docker save tarball to write (required)")
	flag.StringVar(&opts.OCI, "oci", "", "the OCI image layout directory to write (default: -out with .oci for .tar)")
	flag.StringVar(&opts.Arch, "arch", "", "the architecture of the image in -out (default: the one binary's, or this machine's)")
	flag.StringVar(&opts.Labels.Source, "source", "", "org.opencontainers.image.source: the source repository's URL")
	flag.StringVar(&opts.Labels.Revision, "revision", "", "org.opencontainers.image.revision: the source's revision")
	flag.StringVar(&opts.Labels.Version, "version", "", "org.opencontainers.image.version: the version")
	flag.Parse()
	if err := opts.check(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		flag.Usage()
		os.Exit(2)
	}
	if err := Run(opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// check reports every required flag that is missing, at once.
func (o Options) check() error {
	var errs []error
	if len(o.Binaries) == 0 {
		errs = append(errs, errors.New("-binary: missing"))
	}
	if o.Tag == "" {
		errs = append(errs, errors.New("-tag: missing"))
	}
	if o.Out == "" {
		errs = append(errs, errors.New("-out: missing"))
	}
	return errors.Join(errs...)
}

// Run reads opts.Binaries, writes their images' layout to opts.OCI and
// the image of opts.Arch to opts.Out, and says so on stdout. It returns
// the error of reading a binary, of building the images (every mistake
// at once), or of writing; on any error after it created opts.Out, it
// removes it, so no partial tarball is left to load.
func Run(opts Options, stdout io.Writer) (err error) {
	spec := image.Spec{Name: opts.Name, Tag: opts.Tag, Labels: opts.Labels}
	var errs []error
	for _, path := range opts.Binaries {
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("-binary: %w", err))
			continue
		}
		spec.Binaries = append(spec.Binaries, b)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if spec.Name == "" {
		spec.Name = filepath.Base(opts.Binaries[0])
	}
	images, err := image.Build(spec)
	if err != nil {
		return err
	}
	arch := opts.Arch
	if archs := images.Architectures(); arch == "" && len(archs) == 1 {
		arch = archs[0]
	} else if arch == "" {
		arch = runtime.GOARCH
	}
	if !slices.Contains(images.Architectures(), arch) {
		return fmt.Errorf("-arch %s: no binary of it, only %s", arch, strings.Join(images.Architectures(), ", "))
	}
	oci := opts.OCI
	if oci == "" {
		oci = strings.TrimSuffix(opts.Out, ".tar") + ".oci"
	}
	if err := images.WriteLayout(oci); err != nil {
		return fmt.Errorf("-oci %s: %w", oci, err)
	}
	f, err := os.Create(opts.Out)
	if err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("-out %s: %w", opts.Out, cerr)
		}
		if err != nil {
			_ = os.Remove(opts.Out)
		}
	}()
	if err := images.WriteTarball(f, arch); err != nil {
		return fmt.Errorf("-out %s: %w", opts.Out, err)
	}
	_, err = fmt.Fprintf(stdout, "image %s: /%s for linux/%s, written to %s (linux/%s) and %s\n",
		opts.Tag, spec.Name, strings.Join(images.Architectures(), ", linux/"), opts.Out, arch, oci)
	return err
}
