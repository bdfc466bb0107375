// Command compare measures loam against controller-runtime, at its
// defaults and tuned, on an API server it starts in its own process, and
// prints a Markdown table of the figures: `make compare` runs it.
//
//	cd benchmarks && go run ./cmd/compare -n 5000 -w 4 -r 3 -out compare.md
//
// It builds the two controllers with the go command on PATH unless -bin
// names a directory that holds them. Progress goes to stderr, the table to
// stdout and to -out. Linux only: it reads the controllers' CPU time and
// memory from /proc. See the benchmarks module's README.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/loam-dev/loam/benchmarks/compare"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "compare:", err)
		}
		os.Exit(1) //nolint:forbidigo // a command for people, not an App
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := compare.Config{Log: stderr}
	fs.IntVar(&cfg.N, "n", 5000, "objects created and settled in each run")
	fs.IntVar(&cfg.Workers, "w", 4, "W: the limit's goroutines and each controller's workers")
	fs.IntVar(&cfg.Repeats, "r", 3, "repeats of every mode, interleaved")
	fs.IntVar(&cfg.Creators, "creators", 16, "the harness's parallel creators")
	modes := fs.String("modes", "", "comma-separated modes to run (default all: limit,controller-runtime,controller-runtime-tuned,loam)")
	fs.StringVar(&cfg.Bin, "bin", "", "directory holding crcontroller and loamcontroller (default: build them)")
	fs.DurationVar(&cfg.Timeout, "timeout", 0, "bound on each run's convergence (default 10m)")
	fs.BoolVar(&cfg.Restart, "restart", false, "after each loam run, restart loam's controller over the settled objects and measure its resync")
	fs.StringVar(&cfg.Profile, "profile", "", "write a CPU profile of the harness's process (the API server's) in each run's window into this directory")
	out := fs.String("out", "", "also write the table to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *modes != "" {
		for m := range strings.SplitSeq(*modes, ",") {
			cfg.Modes = append(cfg.Modes, compare.Mode(strings.TrimSpace(m)))
		}
	}
	cfg.Environ = os.Environ() //nolint:forbidigo // the controllers start from the harness's environment, less the Go runtime's settings

	//nolint:forbidigo // a command for people, not an App: Ctrl-C stops it, and its cluster and controllers with it
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	res, err := compare.Run(ctx, cfg)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := res.Markdown(&b, "cd benchmarks && go run ./cmd/compare "+strings.Join(args, " ")); err != nil {
		return err
	}
	if *out != "" {
		//nolint:forbidigo // writing the table where -out says is this command's job
		if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write -out: %w", err)
		}
	}
	_, err = stdout.Write(b.Bytes())
	return err
}
