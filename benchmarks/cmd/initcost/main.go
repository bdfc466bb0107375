// Command initcost measures what each probe of package initcost costs
// before its main runs — its packages' initialisation (GODEBUG=inittrace=1)
// and its resident memory as main starts — and prints a Markdown table,
// with the packages whose initialisation allocates the most:
//
//	cd benchmarks && go run ./cmd/initcost -r 3 -top 10
//
// It builds the probes with the go command on PATH, in this module. The
// bytes and allocations are the same every run; the clock and the
// memory are the median of -r runs. Linux only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loam-dev/loam/benchmarks/initcost"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "initcost:", err)
		}
		os.Exit(1) //nolint:forbidigo // a command for people, not an App
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("initcost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runs := fs.Int("r", 3, "runs of each probe")
	top := fs.Int("top", 10, "packages listed per probe, the most bytes first")
	dir := fs.String("C", ".", "the benchmarks module's directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runs < 1 {
		return fmt.Errorf("-r %d: at least one run", *runs)
	}
	// The probes measured, in the table's order.
	probes := []string{"empty", "celcheck", "kube", "webhookcel", "loamcontroller", "crcontroller"}
	bin, err := os.MkdirTemp("", "initcost")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(bin) }()

	results := make([][]initcost.Trace, len(probes))
	for i, p := range probes {
		fmt.Fprintf(stderr, "building %s\n", p)
		out := filepath.Join(bin, p)
		if err := initcost.Build(ctx, *dir, p, out); err != nil {
			return err
		}
		for range *runs {
			t, err := initcost.Run(ctx, out)
			if err != nil {
				return err
			}
			results[i] = append(results[i], t)
		}
	}
	fmt.Fprintf(stdout, "`cd benchmarks && go run ./cmd/initcost -r %d -top %d`\n\n", *runs, *top)
	fmt.Fprintln(stdout, "| probe | packages | init bytes | init allocs | init clock (ms) | RSS at main (MiB) | anon | file |")
	fmt.Fprintln(stdout, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for i, p := range probes {
		ts := results[i]
		fmt.Fprintf(stdout, "| %s | %d | %d | %d | %.2f | %.1f | %.1f | %.1f |\n", p,
			len(ts[0].Packages), ts[0].Bytes(), ts[0].Allocs(),
			median(ts, func(t initcost.Trace) float64 { return float64(t.Clock()) / float64(time.Millisecond) }),
			median(ts, func(t initcost.Trace) float64 { return mib(t.Memory.RSS) }),
			median(ts, func(t initcost.Trace) float64 { return mib(t.Memory.Anon) }),
			median(ts, func(t initcost.Trace) float64 { return mib(t.Memory.File) }))
	}
	for i, p := range probes {
		fmt.Fprintf(stdout, "\n%s, the %d packages whose initialisation allocates the most:\n\n", p, *top)
		var lines []string
		for _, pk := range results[i][0].Top(*top) {
			lines = append(lines, fmt.Sprintf("- %s: %d bytes, %d allocs", pk.Path, pk.Bytes, pk.Allocs))
		}
		fmt.Fprintln(stdout, strings.Join(lines, "\n"))
	}
	return nil
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// median returns the median of f over ts, which is not empty: the mean
// of the middle two for an even number.
func median(ts []initcost.Trace, f func(initcost.Trace) float64) float64 {
	vs := make([]float64, len(ts))
	for i, t := range ts {
		vs[i] = f(t)
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}
