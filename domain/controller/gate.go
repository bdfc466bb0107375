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
	var errs []error
	for i, g := range c.Gates {
		errs = append(errs, g.mistakes(c.Name, i)...)
	}
	return errors.Join(errs...)
}

// await waits for each of the Gates in turn, each until it opens or its
// Bound passes, and reports false when stop ended first.
func (c *Controller) await(stop context.Context) bool {
	for _, g := range c.c.Gates {
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
