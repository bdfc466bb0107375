package compare

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// Mode is what settles a run's objects.
type Mode string

// The four modes, in the order the first repeat runs them.
const (
	// Limit is the API server's raw write limit: the harness itself makes
	// the two applies a reconcile makes, from W goroutines, and never
	// decodes an answer.
	Limit Mode = "limit"
	// ControllerRuntime is package crcontroller's controller, in a process
	// of its own, at controller-runtime's defaults.
	ControllerRuntime Mode = "controller-runtime"
	// ControllerRuntimeTuned is the same controller with the options
	// controller-runtime's documentation recommends (crcontroller.Tune):
	// metadata-only Owns, managedFields stripped from its cache, no gzip.
	ControllerRuntimeTuned Mode = "controller-runtime-tuned"
	// Loam is package loamcontroller's controller, in a process of its
	// own.
	Loam Mode = "loam"
)

// Modes are every mode, in the order of the first repeat.
var Modes = []Mode{Limit, ControllerRuntime, ControllerRuntimeTuned, Loam}

// controller reports whether m runs a controller in a child process.
func (m Mode) controller() bool { return m != Limit }

// short is m's name in its runs' namespaces and the table's ratios.
func (m Mode) short() string {
	switch m {
	case ControllerRuntime:
		return "cr"
	case ControllerRuntimeTuned:
		return "crt"
	}
	return string(m)
}

// valid reports whether m is one of Modes.
func (m Mode) valid() bool { return slices.Contains(Modes, m) }

// Config is what a comparison runs.
type Config struct {
	// N is the number of objects each run creates and settles.
	N int
	// Workers is W: the limit's goroutines, controller-runtime's
	// MaxConcurrentReconciles and loam's Settings.Workers.
	Workers int
	// Repeats is how many times each mode runs. Each repeat runs every
	// mode once, in an order rotated by one from the repeat before, so
	// that no mode always runs first or last.
	Repeats int
	// Creators is the number of the harness's goroutines that create the
	// N objects at once, as fast as the API server takes them.
	Creators int
	// Modes are the modes to run, in the first repeat's order; nil is
	// every mode.
	Modes []Mode
	// Bin is a directory holding the controllers' programs, crcontroller
	// (both controller-runtime modes) and loamcontroller, built with the
	// harness's own Go toolchain. When it is empty, Run builds them with
	// `go build`.
	Bin string
	// Environ is the environment the controllers start from, such as
	// os.Environ(). Run removes GOGC, GOMEMLIMIT and GOMAXPROCS from it,
	// so both run with the Go runtime's defaults, and sets KUBECONFIG.
	Environ []string
	// Timeout bounds each run, from its first create until every object
	// has settled.
	Timeout time.Duration
	// Restart, in the loam mode, restarts loam's controller once every
	// object has settled: a fresh one starts against the same stored
	// objects, and is measured until it has reconciled every one once
	// more and is quiet (see Restart). It costs a controller's start and
	// a resync per loam run, so small comparisons may skip it.
	Restart bool
	// Profile, when not empty, is a directory where each run writes a CPU
	// profile of the harness's process in its window: what the API server
	// did to serve that mode (with the harness's creators and watch); and
	// each controller writes one of its own process, from its start until
	// every object settled, as <namespace>-<mode>.pprof.
	Profile string
	// Log receives a line as each step and each run ends; nil discards
	// them.
	Log io.Writer
}

// The defaults of Config's zero fields.
const (
	defaultCreators = 16
	defaultTimeout  = 10 * time.Minute
)

// withDefaults fills cfg's zero fields that have a default.
func (cfg Config) withDefaults() Config {
	if cfg.Creators == 0 {
		cfg.Creators = defaultCreators
	}
	if cfg.Modes == nil {
		cfg.Modes = Modes
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return cfg
}

// check reports every mistake in cfg at once.
func (cfg Config) check() error {
	var errs []error
	positive := func(name string, v int) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("compare: %s is %d: want at least 1", name, v))
		}
	}
	positive("N", cfg.N)
	positive("Workers", cfg.Workers)
	positive("Repeats", cfg.Repeats)
	positive("Creators", cfg.Creators)
	if cfg.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("compare: Timeout is %v: want a positive duration", cfg.Timeout))
	}
	seen := map[Mode]bool{}
	for _, m := range cfg.Modes {
		switch {
		case !m.valid():
			errs = append(errs, fmt.Errorf("compare: mode %q: want %s, %s, %s or %s", m, Limit, ControllerRuntime, ControllerRuntimeTuned, Loam))
		case seen[m]:
			errs = append(errs, fmt.Errorf("compare: mode %q twice", m))
		}
		seen[m] = true
	}
	if len(cfg.Modes) == 0 {
		errs = append(errs, errors.New("compare: no mode"))
	}
	if cfg.Restart && !seen[Loam] {
		errs = append(errs, fmt.Errorf("compare: Restart restarts loam's controller, and mode %s doesn't run", Loam))
	}
	return errors.Join(errs...)
}

// order returns the modes of repeat r (from 0): the first repeat's order
// rotated left by r.
func (cfg Config) order(r int) []Mode {
	n := len(cfg.Modes)
	out := make([]Mode, n)
	for i := range n {
		out[i] = cfg.Modes[(i+r)%n]
	}
	return out
}
