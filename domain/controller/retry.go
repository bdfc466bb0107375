package controller

import (
	"context"
	"fmt"
	"time"
)

// CheckRetryInterval is how long Serve waits between two tries of a first
// check that failed with an error a Gate's Retries accepts: a second,
// short beside how long an API server's endpoints take to follow a pod,
// and long enough that a Bound of 30 seconds makes about 30 requests.
const CheckRetryInterval = time.Second

// check runs the Watch's check, and runs it again while it fails with an
// error one of gates' Retries accepts, every CheckRetryInterval, for at
// most that Gate's Bound from the start of the first try: a retried try
// that still runs when the Bound passes is cut short, since a conversion
// webhook that hangs rather than refuses keeps each try waiting. It
// returns nil once a check passes, the first error no Gate retries, the
// last retried error wrapped once the Bound has passed, and stop's error
// when stop ends first.
func (c *Controller) check(stop context.Context, gates []Gate) error {
	start := c.c.Clock.Now()
	var last *retried
	for n := 1; ; n++ {
		var cut bool
		var err error
		if last == nil {
			err = c.c.Watch.Check(stop)
		} else {
			cut, err = c.bounded(stop, last.bound-c.c.Clock.Now().Sub(start))
		}
		if err == nil || stop.Err() != nil {
			return err
		}
		elapsed := c.c.Clock.Now().Sub(start)
		if cut {
			// The cut's own error is no Gate's: the last retried one is
			// the cause.
			return last.exhausted(elapsed, n)
		}
		g, ok := retrying(gates, err)
		if !ok {
			return err
		}
		last = &retried{err: err, gate: g.Name, bound: g.Bound}
		if elapsed+CheckRetryInterval >= g.Bound {
			return last.exhausted(elapsed, n)
		}
		if g.Retrying != nil {
			g.Retrying(n, err)
		}
		if !c.sleep(stop, CheckRetryInterval) {
			return stop.Err()
		}
	}
}

// retried is the last error of the first check that a Gate retried.
type retried struct {
	err   error
	gate  string
	bound time.Duration
}

// exhausted returns r's error once its Gate's Bound has passed, elapsed
// after the first try started, with tries made. A first try that took
// the Bound up by itself, as one against a webhook that takes the
// request and never answers does until the API server gives up on it,
// was never retried, and the error says so.
func (r *retried) exhausted(elapsed time.Duration, tries int) error {
	if tries == 1 {
		return fmt.Errorf("%w (failing on its first try, which took %v, leaving no retry within the %v %s allows)", r.err, elapsed, r.bound, r.gate)
	}
	return fmt.Errorf("%w (still failing after retrying for %v, as %s allows)", r.err, elapsed, r.gate)
}

// bounded runs the Watch's check, cut short once left has passed on the
// Clock, and reports whether it was cut.
func (c *Controller) bounded(stop context.Context, left time.Duration) (cut bool, err error) {
	ctx, cancel := context.WithCancel(stop)
	defer cancel()
	stopTimer := c.c.Clock.AfterFunc(left, cancel)
	err = c.c.Watch.Check(ctx)
	return !stopTimer() && err != nil, err
}

// retrying returns the first of gates whose Retries accepts err.
func retrying(gates []Gate, err error) (Gate, bool) {
	for _, g := range gates {
		if g.Retries != nil && g.Retries(err) {
			return g, true
		}
	}
	return Gate{}, false
}

// sleep waits d on the Clock, and reports false when stop ended first.
func (c *Controller) sleep(stop context.Context, d time.Duration) bool {
	passed := make(chan struct{})
	cancel := c.c.Clock.AfterFunc(d, func() { close(passed) })
	select {
	case <-passed:
		return true
	case <-stop.Done():
		cancel()
		return false
	}
}
