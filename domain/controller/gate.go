package controller

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gate is something a Controller waits for before it serves, such as the
// App's webhooks: a resource converted by a webhook can't be listed until
// the webhook serves, so the Controller's first check would fail. The wait
// is bounded, since a Gate that never opens must not keep the Controller
// from failing as it would have without one.
type Gate struct {
	// Name names what is waited for, in errors.
	Name string
	// Open is closed once the Controller may go on.
	Open <-chan struct{}
	// Bound is the longest Serve waits for Open; once it passes, Serve
	// goes on as if Open were closed.
	Bound time.Duration
	// Waiting, when not nil, is called once when Serve finds Open not yet
	// closed and starts to wait; Passed, when not nil, when Bound passes
	// before Open is closed. They are for the records about the wait.
	Waiting, Passed func()
	// Retries, when not nil, says whether an error of Serve's first check
	// is one this Gate stands for even once Open is closed, such as the
	// API server's failure to reach the App's conversion webhook through
	// a Service whose endpoints lag behind the pod: Serve checks again
	// every CheckRetryInterval, for at most Bound from the first try,
	// cutting short a try still running then, rather than fail at once
	// (retry.go). Any other error still ends Serve.
	Retries func(err error) bool
	// Retrying, when not nil, is called for each failed check Serve
	// retries, with the try's number, 1 for the first, and its error.
	Retrying func(try int, err error)
}

// mistakes returns an error for each mistake in g, the ith of Gates.
func (g Gate) mistakes(name string, i int) []error {
	var errs []error
	if g.Open == nil {
		errs = append(errs, fmt.Errorf("controller %s: Config.Gates[%d] (%s): Open is nil", name, i, g.Name))
	}
	if g.Bound <= 0 {
		errs = append(errs, fmt.Errorf("controller %s: Config.Gates[%d] (%s): Bound is %v: want above zero", name, i, g.Name, g.Bound))
	}
	return errs
}

// gateMistakes returns the mistakes of c's Gates, joined.
func (c Config) gateMistakes() error {
	return errors.Join(gatesMistakes(c.Name, c.Gates)...)
}

// gatesMistakes returns an error for each mistake in gates.
func gatesMistakes(name string, gates []Gate) []error {
	var errs []error
	for i, g := range gates {
		errs = append(errs, g.mistakes(name, i)...)
	}
	return errs
}

// gates returns the Gates Serve waits for: Config's, and FindGates'.
// Found Gates with a mistake are left out, since New could not report
// them: FindGates is the assembler's, which makes none.
func (c *Controller) gates() []Gate {
	gates := c.c.Gates
	if c.c.FindGates == nil {
		return gates
	}
	for i, g := range c.c.FindGates() {
		if len(g.mistakes(c.c.Name, i)) == 0 {
			gates = append(gates[:len(gates):len(gates)], g)
		}
	}
	return gates
}

// await waits for each of gates in turn, each until it opens or its
// Bound passes, and reports false when stop ended first.
func (c *Controller) await(stop context.Context, gates []Gate) bool {
	for _, g := range gates {
		select {
		case <-g.Open:
			continue
		default:
		}
		if g.Waiting != nil {
			g.Waiting()
		}
		passed := make(chan struct{})
		cancel := c.c.Clock.AfterFunc(g.Bound, func() { close(passed) })
		select {
		case <-g.Open:
			cancel()
		case <-passed:
			if g.Passed != nil {
				g.Passed()
			}
		case <-stop.Done():
			cancel()
			return false
		}
	}
	return true
}
