// Package health says whether parts of an App are healthy, for the probes
// that Kubernetes sends to a pod.
//
// A Monitor reports one part's health. Flag is a Monitor that the part sets
// itself; All and Any combine Monitors; MonitorFunc adapts a function. A
// Check puts Monitors behind one of the two probes: Readiness, which holds
// traffic and rollouts back from a pod that is not ready yet, and Liveness,
// which has the kubelet restart a pod that is stuck. httphealth serves
// Checks over HTTP.
package health

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode"
)

// errNilMonitor is reported for a nil Monitor, by Check.Validate before
// anything runs, and by All and Any when they evaluate one anyway.
var errNilMonitor = errors.New("nil Monitor")

// Monitor reports whether one part of an App is healthy.
type Monitor interface {
	// Healthy reports whether the part is healthy. An error makes the part
	// unhealthy, whatever the bool says, and says why; a part that is
	// unhealthy for an ordinary reason, such as caches that have not synced
	// yet, may return false and no error.
	Healthy(ctx context.Context) (bool, error)
}

// MonitorFunc adapts a function to a Monitor.
type MonitorFunc func(ctx context.Context) (bool, error)

// Healthy returns f(ctx). A nil MonitorFunc is unhealthy, with an error
// that says so.
func (f MonitorFunc) Healthy(ctx context.Context) (bool, error) {
	if f == nil {
		return false, errNilMonitor
	}
	return f(ctx)
}

// Flag is a Monitor that is healthy or not as it was last marked, for a part
// that knows its own state, such as a server that is healthy once it
// listens. The zero Flag is unhealthy and ready to use. A Flag is safe for
// concurrent use, and must not be copied after first use.
type Flag struct {
	healthy atomic.Bool
}

// MarkHealthy makes f healthy.
func (f *Flag) MarkHealthy() { f.healthy.Store(true) }

// MarkUnhealthy makes f unhealthy.
func (f *Flag) MarkUnhealthy() { f.healthy.Store(false) }

// Healthy reports how f was last marked, and never returns an error but for
// a nil Flag, which is unhealthy.
func (f *Flag) Healthy(context.Context) (bool, error) {
	if f == nil {
		return false, errNilMonitor
	}
	return f.healthy.Load(), nil
}

// all is the Monitor All returns.
type all []Monitor

// All returns a Monitor that is healthy when every one of monitors is. It
// asks each of them, so that its error joins every one of theirs. All with
// no monitors is always healthy, which Check.Validate reports as a mistake
// in a Check.
func All(monitors ...Monitor) Monitor {
	return all(append([]Monitor(nil), monitors...))
}

// Healthy asks every Monitor, and is healthy when all of them are.
func (a all) Healthy(ctx context.Context) (bool, error) {
	healthy := true
	var errs []error
	for _, m := range a {
		ok, err := ask(ctx, m)
		if err != nil {
			errs = append(errs, err)
		}
		healthy = healthy && ok
	}
	return healthy, errors.Join(errs...)
}

// anyOf is the Monitor Any returns.
type anyOf []Monitor

// Any returns a Monitor that is healthy when at least one of monitors is.
// It asks them in order and stops at the first healthy one; when none is,
// its error joins every one of theirs. Any with no monitors is never
// healthy, which Check.Validate reports as a mistake in a Check.
func Any(monitors ...Monitor) Monitor {
	return anyOf(append([]Monitor(nil), monitors...))
}

// Healthy asks the Monitors in order until one is healthy.
func (a anyOf) Healthy(ctx context.Context) (bool, error) {
	var errs []error
	for _, m := range a {
		ok, err := ask(ctx, m)
		if ok {
			return true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return false, errors.Join(errs...)
}

// ask asks m, treating a nil Monitor and a Monitor's error as unhealthy.
func ask(ctx context.Context, m Monitor) (bool, error) {
	if m == nil {
		return false, errNilMonitor
	}
	ok, err := m.Healthy(ctx)
	if err != nil {
		return false, err
	}
	return ok, nil
}

// Kind is which probe a Check answers.
type Kind uint8

// The probes a Check answers. The zero Kind is none, which Check.Validate
// reports.
const (
	// KindReadiness checks whether the pod may take traffic, and whether a
	// rollout may go on to the next pod.
	KindReadiness Kind = iota + 1
	// KindLiveness checks whether the process is working at all; the kubelet
	// restarts a container whose liveness probe keeps failing.
	KindLiveness
)

// String returns "readiness" or "liveness", or "Kind(n)" for any other n.
func (k Kind) String() string {
	switch k {
	case KindReadiness:
		return "readiness"
	case KindLiveness:
		return "liveness"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Check is a Monitor answering one probe. Readiness and Liveness make one;
// Named gives it the name that a failing probe reports it by.
type Check struct {
	// Kind is the probe the Check answers.
	Kind Kind
	// Name names the Check in a failing probe's report. An empty Name is
	// allowed: the report then names the Check by its place.
	Name string
	// Monitor is what the Check asks.
	Monitor Monitor
}

// Readiness returns a readiness Check that is healthy when every one of
// monitors is, as All's Monitor is.
func Readiness(monitors ...Monitor) Check {
	return Check{Kind: KindReadiness, Monitor: combine(monitors)}
}

// Liveness returns a liveness Check that is healthy when every one of
// monitors is, as All's Monitor is.
func Liveness(monitors ...Monitor) Check {
	return Check{Kind: KindLiveness, Monitor: combine(monitors)}
}

// combine returns the one Monitor of monitors itself, and All of them
// otherwise, so that a Check's one Monitor's error reaches the probe as is.
func combine(monitors []Monitor) Monitor {
	if len(monitors) == 1 {
		return monitors[0]
	}
	return All(monitors...)
}

// Named returns a copy of c named name.
func (c Check) Named(name string) Check {
	c.Name = name
	return c
}

// String names c as a probe's report does: `readiness check "name"`, or
// "readiness check" when c has no name.
func (c Check) String() string {
	if c.Name == "" {
		return c.Kind.String() + " check"
	}
	return c.Kind.String() + " check " + strconv.Quote(c.Name)
}

// Validate reports every mistake in c: a Kind that is neither
// KindReadiness nor KindLiveness, a Name holding a control character such
// as a newline, a nil Monitor, and, anywhere in an All or Any within its
// Monitor, a nil Monitor or an All or Any of no monitors, as Readiness and
// Liveness called with none make. Each mistake is one error, naming c as
// String does, and the errors are joined with errors.Join; Validate
// returns nil when there is none.
func (c Check) Validate() error {
	var errs []error
	if c.Kind != KindReadiness && c.Kind != KindLiveness {
		errs = append(errs, fmt.Errorf("its Kind is %v, neither KindReadiness nor KindLiveness", c.Kind))
	}
	if strings.ContainsFunc(c.Name, unicode.IsControl) {
		errs = append(errs, fmt.Errorf("its Name %q holds a control character", c.Name))
	}
	errs = append(errs, validateMonitor("Monitor", c.Monitor)...)
	for i, err := range errs {
		errs[i] = fmt.Errorf("%v: %w", c, err)
	}
	return errors.Join(errs...)
}

// validateMonitor returns the mistakes in m, which path names.
func validateMonitor(path string, m Monitor) []error {
	var children []Monitor
	switch m := m.(type) {
	case nil:
		return []error{fmt.Errorf("%s: %w", path, errNilMonitor)}
	case *Flag:
		if m == nil {
			return []error{fmt.Errorf("%s: %w (a nil *Flag)", path, errNilMonitor)}
		}
		return nil
	case MonitorFunc:
		if m == nil {
			return []error{fmt.Errorf("%s: %w (a nil MonitorFunc)", path, errNilMonitor)}
		}
		return nil
	case all:
		if len(m) == 0 {
			return []error{fmt.Errorf("%s: no monitors, which is always healthy", path)}
		}
		children = m
	case anyOf:
		if len(m) == 0 {
			return []error{fmt.Errorf("%s: Any of no monitors, which is never healthy", path)}
		}
		children = m
	default:
		return nil
	}
	var errs []error
	for i, child := range children {
		errs = append(errs, validateMonitor(path+"["+strconv.Itoa(i)+"]", child)...)
	}
	return errs
}
