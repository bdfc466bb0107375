// Command kubetestmod writes, or checks, the replace block that a go.mod
// requiring github.com/loam-dev/loam/kubetest needs.
//
// kubetest builds k8s.io/kubernetes, whose go.mod requires each of its
// staging modules (k8s.io/api, k8s.io/client-go, ...) at v0.0.0, and
// replace directives count only in the main module: every module that
// requires kubetest repeats kubetest's replaces. kubetestmod reads them
// from the go.mod of the kubetest the user's go.mod requires — a local
// directory it is replaced with, or the module cache, through
// `go mod download -json` — and adds each one the user's go.mod lacks, or
// corrects one whose version is stale, keeping every other line. A second
// run changes nothing.
//
//	go run github.com/loam-dev/loam/cmd/kubetestmod [-check] [path/to/go.mod]
//	go run ./cmd/kubetestmod $HOME/src/website/go.mod   # from a loam checkout
//
// With -check it writes nothing: it prints each missing or wrong replace,
// naming the file and the line, and exits 1 when there is any. It exits 2
// when it could not do its job — a bad flag, a go.mod it can't read or
// that requires no kubetest, a kubetest it can't download — so a CI step
// tells a go.mod to fix from a check that never ran.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, download)
	os.Exit(exitCode(err, os.Stderr)) //nolint:forbidigo // a command for people, not an App
}

// exitCode returns the command's exit code for run's err, as diff's are:
// 0 for none (and for -h, whose usage is printed), 1 when the go.mod
// lacks replaces (each printed), and 2 when the command could not do its
// job: a bad flag, whose message the flag package printed with the usage,
// or any other error, which it prints to stderr. A CI step tells a go.mod
// to fix from a check that never ran.
func exitCode(err error, stderr io.Writer) int {
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errProblems):
		return 1
	case errors.As(err, &usage):
		return 2
	default:
		fmt.Fprintln(stderr, "kubetestmod:", err)
		return 2
	}
}

// usageError is a flag the flag package refused, after printing it and
// the usage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// fetchFunc returns the go.mod of a module version, and the file's name
// for messages.
type fetchFunc func(ctx context.Context, path, version string) (name string, data []byte, err error)

// run is the command: flags and arguments in args, messages to stdout and
// stderr, kubetest's go.mod from a directory or else through fetch.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, fetch fetchFunc) error {
	fs := flag.NewFlagSet("kubetestmod", flag.ContinueOnError)
	fs.SetOutput(stderr)
	check := fs.Bool("check", false, "write nothing: print each missing or wrong replace and exit 1 if there is any")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: kubetestmod [-check] [path/to/go.mod]  (default ./go.mod)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	file := "go.mod"
	switch fs.NArg() {
	case 0:
	case 1:
		file = fs.Arg(0)
	default:
		return fmt.Errorf("one go.mod at most, got %q", fs.Args())
	}

	data, err := os.ReadFile(file) //nolint:forbidigo // the file the person named
	if err != nil {
		return err
	}
	olds, news, src, err := kubetestReplaces(ctx, file, data, fetch)
	if err != nil {
		return err
	}
	if *check {
		f, err := modfile.Parse(file, data, nil)
		if err != nil {
			return err
		}
		problems := Check(f, olds, news)
		for _, p := range problems {
			fmt.Fprintln(stderr, p.Message(file))
		}
		if len(problems) > 0 {
			fmt.Fprintf(stderr, "%d of the %d replaces of %s are missing or wrong: run kubetestmod without -check to write them\n", len(problems), len(olds), src)
			return errProblems
		}
		fmt.Fprintf(stdout, "%s: has the %d replaces of %s\n", file, len(olds), src)
		return nil
	}
	out, changed, err := Fix(file, data, olds, news)
	if err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(stdout, "%s: already has the %d replaces of %s\n", file, len(olds), src)
		return nil
	}
	if err := replaceFile(file, out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: wrote the %d replaces of %s\n", file, len(olds), src)
	return nil
}

// kubetestReplaces returns the replaces that the kubetest the go.mod file
// (data) requires needs, and where they came from.
func kubetestReplaces(ctx context.Context, file string, data []byte, fetch fetchFunc) (olds, news []module.Version, src Source, err error) {
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		return nil, nil, Source{}, err
	}
	src, err = Locate(file, f)
	if err != nil {
		return nil, nil, Source{}, err
	}
	var name string
	var mod []byte
	if src.Dir != "" {
		name = filepath.Join(src.Dir, "go.mod")
		mod, err = os.ReadFile(name) //nolint:forbidigo // the directory the person's go.mod names
		if err != nil {
			return nil, nil, Source{}, fmt.Errorf("%s replaces %s with %s: %w", file, KubetestModule, src.Dir, err)
		}
	} else {
		name, mod, err = fetch(ctx, src.Path, src.Version)
		if err != nil {
			return nil, nil, Source{}, fmt.Errorf("%s requires %s: %w", file, src, err)
		}
	}
	olds, news, err = Needed(name, mod)
	return olds, news, src, err
}

// download returns the go.mod of path@version from the module cache,
// downloading it first if need be, with `go mod download -json`, run in a
// directory of no module so the user's go.mod, which may not load yet,
// plays no part.
func download(ctx context.Context, path, version string) (string, []byte, error) {
	dir, err := os.MkdirTemp("", "kubetestmod-")
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path+"@"+version)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var info struct {
		GoMod string
		Error string
	}
	if err := json.Unmarshal(stdout.Bytes(), &info); err != nil {
		return "", nil, fmt.Errorf("go mod download -json %s@%s: %w (%s)", path, version, errors.Join(runErr, err), bytes.TrimSpace(stderr.Bytes()))
	}
	if info.Error != "" {
		return "", nil, fmt.Errorf("go mod download %s@%s: %s", path, version, info.Error)
	}
	if runErr != nil {
		return "", nil, fmt.Errorf("go mod download %s@%s: %w (%s)", path, version, runErr, bytes.TrimSpace(stderr.Bytes()))
	}
	data, err := os.ReadFile(info.GoMod) //nolint:forbidigo // the module cache's copy go reported
	return info.GoMod, data, err
}

// replaceFile makes data the content of file all at once: it writes a
// temporary file beside it and renames it over file once it is whole, so
// a write that fails, for a full disk or a killed process, leaves file as
// it was rather than cut short. It keeps file's permissions, and follows
// a symlink, so the link stays one and its target changes.
func replaceFile(file string, data []byte) (err error) {
	target, err := filepath.EvalSymlinks(file)
	if err != nil {
		return err
	}
	info, err := os.Stat(target)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".kubetestmod-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}
