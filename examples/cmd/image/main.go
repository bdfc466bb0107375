// Command image writes the container image of a static binary, as
// package image builds it, to a tarball that `docker load` and
// `kind load image-archive` read: no Docker daemon, no registry. make
// image runs it for each example operator:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags=-s -o bin/memcached-operator ./memcached/cmd/memcached
//	go run ./cmd/image -binary bin/memcached-operator -name memcached-operator \
//		-tag memcached-operator:dev -out bin/memcached-operator.tar
//
// It exits 2 for a flag that is missing, and 1 when the image can't be
// built or written, naming every mistake.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/loam-dev/loam/examples/image"
)

// Options are the command's flags.
type Options struct {
	// Binary is the path of the static binary to put in the image.
	Binary string
	// Name is the binary's file name in the image, and so its entrypoint
	// /Name; the file name of Binary when empty.
	Name string
	// Tag names the image: the image that deploy/deployment.yaml runs.
	Tag string
	// Out is the path of the tarball to write.
	Out string
}

func main() {
	var opts Options
	flag.StringVar(&opts.Binary, "binary", "", "the static Linux binary to put in the image (required)")
	flag.StringVar(&opts.Name, "name", "", "the binary's name in the image, whose entrypoint is /NAME (default: the binary's file name)")
	flag.StringVar(&opts.Tag, "tag", "", "the image's tag, such as memcached-operator:dev (required)")
	flag.StringVar(&opts.Out, "out", "", "the tarball to write (required)")
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
	if o.Binary == "" {
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

// Run reads opts.Binary, writes its image to opts.Out, and says so on
// stdout. It returns the error of reading the binary, of building the
// image (every mistake in it at once), or of writing the tarball; on any
// error after it created opts.Out, it removes it, so no partial tarball
// is left to load.
func Run(opts Options, stdout io.Writer) (err error) {
	binary, err := os.ReadFile(opts.Binary)
	if err != nil {
		return fmt.Errorf("-binary: %w", err)
	}
	name := opts.Name
	if name == "" {
		name = filepath.Base(opts.Binary)
	}
	spec := image.Spec{Name: name, Tag: opts.Tag, Binary: binary}
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
	if err := image.Write(f, spec); err != nil {
		return fmt.Errorf("-out %s: %w", opts.Out, err)
	}
	_, err = fmt.Fprintf(stdout, "image %s: /%s from %s, written to %s\n", opts.Tag, name, opts.Binary, opts.Out)
	return err
}
