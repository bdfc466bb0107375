package scale

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

var (
	flagN       = flag.String("scale.n", "200", "object counts N, comma-separated")
	flagW       = flag.String("scale.w", "4", "worker counts W, comma-separated")
	flagOnly    = flag.String("scale.only", strings.Join(allPhases, ","), "phases to run, comma-separated")
	flagLoad    = flag.String("scale.load", loadBefore, "when convergence's objects are created: before the controller starts, or while it runs")
	flagLease   = flag.String("scale.lease", leaseShort, "failover's Lease durations: short (4s, 2s, 0.5s: fenced, as the chaos suite's) or default (15s, 10s, 2s)")
	flagLoaders = flag.Int("scale.loaders", 16, "parallel clients that create and delete the objects")
	flagLimits  = flag.String("scale.limits", strings.Join(allLimits, ","), "the limit's variants: client-go (the limit), loam (through loam's Client), watched (while informers watch as the Controller's do)")
	flagRepeat  = flag.Int("scale.repeat", 1, "how many times to measure each limit, convergence and priority variant, one after the other")
	flagOut     = flag.String("scale.out", "", "also write the report's tables to this file")
	flagProfile = flag.String("scale.profile", "", "write a CPU profile of each limit's and convergence's timed part into this directory")
	// flagChild makes this test binary the child process of the start-up
	// and memory phases: the file holds its job.
	flagChild = flag.String("scale.child", "", "internal: run as the child process, with the job in this file")
)

// The phases, in the order they run.
const (
	phaseLimit       = "limit"
	phaseConvergence = "convergence"
	phaseStartup     = "startup"
	phaseMemory      = "memory"
	phaseFailover    = "failover"
	phasePriority    = "priority"
)

var allPhases = []string{phaseLimit, phaseConvergence, phaseStartup, phaseMemory, phaseFailover, phasePriority}

// allLimits are the limit's variants: see measureLimit.
var allLimits = []string{viaClientGo, viaLoam, viaWatched}

// When convergence's objects are created.
const (
	loadBefore = "before"
	loadWhile  = "while"
)

// The failover's Lease durations.
const (
	leaseShort   = "short"
	leaseDefault = "default"
)

// config is what the flags ask for.
type config struct {
	ns, ws  []int
	phases  map[string]bool
	limits  []string
	load    string
	lease   leaseDurations
	loaders int
	repeat  int
	out     string
}

// leaseDurations are a Lease's LeaseDuration, RenewDeadline and
// RetryPeriod.
type leaseDurations struct {
	name                    string
	duration, renew, period time.Duration
}

func (l leaseDurations) String() string {
	return fmt.Sprintf("%s (%v, %v, %v)", l.name, l.duration, l.renew, l.period)
}

// parseConfig reads the flags' values, reporting every bad one at once.
func parseConfig(n, w, only, limits, load, lease string, loaders, repeat int, out string) (config, error) {
	var errs []error
	c := config{phases: map[string]bool{}, load: load, loaders: loaders, repeat: repeat, out: out}
	var err error
	if c.ns, err = positiveInts(n); err != nil {
		errs = append(errs, fmt.Errorf("-scale.n: %w", err))
	}
	if c.ws, err = positiveInts(w); err != nil {
		errs = append(errs, fmt.Errorf("-scale.w: %w", err))
	}
	for p := range strings.SplitSeq(only, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(allPhases, p) {
			errs = append(errs, fmt.Errorf("-scale.only: %q is not a phase: want some of %s", p, strings.Join(allPhases, ",")))
			continue
		}
		c.phases[p] = true
	}
	for v := range strings.SplitSeq(limits, ",") {
		v = strings.TrimSpace(v)
		if !slices.Contains(allLimits, v) {
			errs = append(errs, fmt.Errorf("-scale.limits: %q is not a variant: want some of %s", v, strings.Join(allLimits, ",")))
			continue
		}
		c.limits = append(c.limits, v)
	}
	if !slices.Contains(c.limits, viaClientGo) {
		errs = append(errs, fmt.Errorf("-scale.limits: %q lacks %s, the limit itself", limits, viaClientGo))
	}
	if load != loadBefore && load != loadWhile {
		errs = append(errs, fmt.Errorf("-scale.load: %q: want %q or %q", load, loadBefore, loadWhile))
	}
	switch lease {
	case leaseShort:
		c.lease = leaseDurations{leaseShort, 4 * time.Second, 2 * time.Second, 500 * time.Millisecond}
	case leaseDefault:
		c.lease = leaseDurations{leaseDefault, 15 * time.Second, 10 * time.Second, 2 * time.Second}
	default:
		errs = append(errs, fmt.Errorf("-scale.lease: %q: want %q or %q", lease, leaseShort, leaseDefault))
	}
	if loaders < 1 {
		errs = append(errs, fmt.Errorf("-scale.loaders: %d: want at least 1", loaders))
	}
	if repeat < 1 {
		errs = append(errs, fmt.Errorf("-scale.repeat: %d: want at least 1", repeat))
	}
	return c, errors.Join(errs...)
}

// positiveInts parses a comma-separated list of positive integers.
func positiveInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}
