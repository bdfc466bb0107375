// Command passes splits CPU profiles of the comparison's loam controller
// by reconcile pass (package passes), and prints, for each, the share of
// the controller's CPU that went to the first passes, to the second (the
// passes over settled objects), and to everything else:
//
//	cd benchmarks && go run ./cmd/compare -n 5000 -modes loam -r 1 -profile /tmp/prof
//	go run ./cmd/passes /tmp/prof/loam-1-loam.pprof
//
// A profile of a controller that didn't label its passes (one from
// before this command, or controller-runtime's) has every sample outside
// a pass or unlabelled.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/pprof/profile"

	"github.com/loam-dev/loam/benchmarks/internal/passes"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "passes:", err)
		os.Exit(1) //nolint:forbidigo // a command for people, not an App
	}
}

func run(files []string, out io.Writer) error {
	if len(files) == 0 {
		return errors.New("usage: passes PROFILE [PROFILE ...]")
	}
	for _, name := range files {
		//nolint:forbidigo // reading the profiles it is given is this command's job
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		p, err := profile.Parse(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		s, total := passes.Split(p)
		if total == 0 {
			return fmt.Errorf("%s: no CPU samples", name)
		}
		pct := func(ns int64) string { return fmt.Sprintf("%.1f %%", 100*float64(ns)/float64(total)) }
		row := func(what string, ns int64) { fmt.Fprintf(out, "| %s | %.2f | %s |\n", what, float64(ns)/1e9, pct(ns)) }
		fmt.Fprintf(out, "\n%s: %.2f s of CPU sampled\n\n| part | CPU (s) | share |\n| --- | ---: | ---: |\n", name, float64(total)/1e9)
		for _, k := range []string{passes.First, passes.Second} {
			row(k+" passes: body (Reconciler, status encoding)", s.Of(passes.Body, k))
			row(k+" passes: tail (status compared and applied, key settled)", s.Of(passes.Tail, k))
			row("head labelled "+k+" (cache read, decode; the worker's previous pass's label)", s.Of(passes.Head, k))
		}
		row("passes with no label (the controller didn't label them)", s.Of(passes.Head, "")+s.Of(passes.Body, "")+s.Of(passes.Tail, ""))
		row("outside a pass (informers, transport, GC, telemetry)", s.Of(passes.Outside, ""))
		second := s.Of(passes.Body, passes.Second) + s.Of(passes.Tail, passes.Second)
		fmt.Fprintf(out, "\nsecond passes: %s without their head, %s with the head labelled second\n",
			pct(second), pct(second+s.Of(passes.Head, passes.Second)))
	}
	return nil
}
