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
// most that Gate's Bound from the first such failure. It returns nil once
// a check passes, the first error no Gate retries, the last error wrapped
// once the Bound has passed, and stop's error when stop ends first.
func (c *Controller) check(stop context.Context, gates []Gate) error {
	var first time.Time
	for try := 1; ; try++ {
		err := c.c.Watch.Check(stop)
		if err == nil || stop.Err() != nil {
			return err
		}
		g, ok := retrying(gates, err)
		if !ok {
			return err
		}
		now := c.c.Clock.Now()
		if try == 1 {
			first = now
		}
		if now.Sub(first)+CheckRetryInterval > g.Bound {
			return fmt.Errorf("%w (still failing after retrying for %v, as %s allows)", err, now.Sub(first), g.Name)
		}
		if g.Retrying != nil {
			g.Retrying(try, err)
		}
		if !c.sleep(stop, CheckRetryInterval) {
			return stop.Err()
		}
	}
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
