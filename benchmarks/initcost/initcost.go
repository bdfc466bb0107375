// Package initcost measures what a program costs before its main runs:
// each package's initialisation, as the Go runtime's GODEBUG=inittrace=1
// reports it (its clock time, and the bytes and allocations its package
// variables and init functions allocate), and the process's resident
// memory when main starts. The probes under probe/ are the programs it
// measures: each imports one thing and prints /proc/self/status from
// main, so what one costs beyond the empty probe is what that import's
// initialisation costs. cmd/initcost builds and runs them.
//
// The bytes and allocations an initialisation makes do not depend on the
// machine, so a test may bound them; its clock time and the resident
// memory do, and are reported, never asserted. Linux only: the memory is
// read from /proc.
package initcost

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Package is one package's initialisation, a line of inittrace.
type Package struct {
	// Path is the package's import path.
	Path string
	// Clock is how long its initialisation took.
	Clock time.Duration
	// Bytes and Allocs are what its initialisation allocated on the heap.
	Bytes, Allocs int64
}

// Memory is a process's resident memory, in bytes, from
// /proc/<pid>/status.
type Memory struct {
	// RSS is VmRSS: Anon and File together (and shared memory).
	RSS uint64
	// Anon is RssAnon: the heap, stacks and written data.
	Anon uint64
	// File is RssFile: the pages of the binary (and of other files) that
	// the process has touched.
	File uint64
}

// Trace is what one run of a probe reports.
type Trace struct {
	// Packages are the packages initialised, in the order they were.
	Packages []Package
	// Memory is the process's resident memory as main started.
	Memory Memory
}

// Bytes returns the bytes all of t's packages' initialisations
// allocated.
func (t Trace) Bytes() int64 {
	var n int64
	for _, p := range t.Packages {
		n += p.Bytes
	}
	return n
}

// Allocs returns the allocations all of t's packages' initialisations
// made.
func (t Trace) Allocs() int64 {
	var n int64
	for _, p := range t.Packages {
		n += p.Allocs
	}
	return n
}

// Clock returns the time all of t's packages' initialisations took.
func (t Trace) Clock() time.Duration {
	var d time.Duration
	for _, p := range t.Packages {
		d += p.Clock
	}
	return d
}

// Under returns the packages of t whose path is prefix or below it
// (prefix/...).
func (t Trace) Under(prefix string) []Package {
	var out []Package
	for _, p := range t.Packages {
		if p.Path == prefix || strings.HasPrefix(p.Path, prefix+"/") {
			out = append(out, p)
		}
	}
	return out
}

// Top returns t's n packages that allocated the most bytes, the most
// first.
func (t Trace) Top(n int) []Package {
	ps := slices.Clone(t.Packages)
	slices.SortStableFunc(ps, func(a, b Package) int { return int(b.Bytes - a.Bytes) })
	return ps[:min(n, len(ps))]
}

// ParseInitTrace reads the inittrace lines in r, such as
//
//	init k8s.io/api/core/v1 @10 ms, 0.076 ms clock, 67272 bytes, 405 allocs
//
// and returns each package's. It ignores every other line, and fails on
// an init line it cannot read.
func ParseInitTrace(r io.Reader) ([]Package, error) {
	var out []Package
	s := bufio.NewScanner(r)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		p, err := parseInitLine(line)
		if err != nil {
			return nil, fmt.Errorf("inittrace line %q: %w", line, err)
		}
		out = append(out, p)
	}
	return out, s.Err()
}

func parseInitLine(line string) (Package, error) {
	// init PATH @START ms, CLOCK ms clock, BYTES bytes, ALLOCS allocs
	f := strings.Fields(line)
	if len(f) != 11 || !strings.HasPrefix(f[2], "@") || f[3] != "ms," || f[5] != "ms" || f[6] != "clock," || f[8] != "bytes," || f[10] != "allocs" {
		return Package{}, errors.New("not init PATH @T ms, C ms clock, B bytes, A allocs")
	}
	ms, err := strconv.ParseFloat(f[4], 64)
	if err != nil {
		return Package{}, fmt.Errorf("clock: %w", err)
	}
	b, err := strconv.ParseInt(f[7], 10, 64)
	if err != nil {
		return Package{}, fmt.Errorf("bytes: %w", err)
	}
	a, err := strconv.ParseInt(f[9], 10, 64)
	if err != nil {
		return Package{}, fmt.Errorf("allocs: %w", err)
	}
	return Package{Path: f[1], Clock: time.Duration(ms * float64(time.Millisecond)), Bytes: b, Allocs: a}, nil
}

// ParseStatus reads a /proc/<pid>/status and returns its resident memory.
// It fails when VmRSS is missing.
func ParseStatus(status []byte) (Memory, error) {
	var m Memory
	var found bool
	for line := range strings.Lines(string(status)) {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "VmRSS":
			dst, found = &m.RSS, true
		case "RssAnon":
			dst = &m.Anon
		case "RssFile":
			dst = &m.File
		default:
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("status %s: %w", name, err)
		}
		*dst = kb << 10
	}
	if !found {
		return Memory{}, errors.New("status: no VmRSS")
	}
	return m, nil
}

// Build builds the probe named probe (a directory under probe/) of the
// module in dir into out with the go command on PATH, and returns the
// go command's error with its output.
func Build(ctx context.Context, dir, probe, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./initcost/probe/"+probe)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", probe, err, b)
	}
	return nil
}

// Run runs the probe binary bin once with GODEBUG=inittrace=1 and returns
// its Trace: its packages' initialisations from its stderr, and its
// memory from the status it prints.
func Run(ctx context.Context, bin string) (Trace, error) {
	cmd := exec.CommandContext(ctx, bin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Only GODEBUG: nothing of the caller's environment (GOGC, say) changes
	// what the probe allocates.
	cmd.Env = []string{"GODEBUG=inittrace=1"}
	if err := cmd.Run(); err != nil {
		return Trace{}, fmt.Errorf("%s: %w\n%s", bin, err, stderr.Bytes())
	}
	pkgs, err := ParseInitTrace(&stderr)
	if err != nil {
		return Trace{}, fmt.Errorf("%s: %w", bin, err)
	}
	mem, err := ParseStatus(stdout.Bytes())
	if err != nil {
		return Trace{}, fmt.Errorf("%s: %w", bin, err)
	}
	return Trace{Packages: pkgs, Memory: mem}, nil
}
