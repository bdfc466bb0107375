package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrDrainTimeout is the cause a pass's context is cancelled with when it
// still runs DrainTimeout after its Lease's hand-off began: a rebalance
// gives the pass's shard to another replica, or Serve stops. The Lease is
// renewed until the pass has returned all the same, so the pass never
// overlaps the next holder's; the cancel bounds how long the hand-off
// waits for a pass that heeds its context. Its text names kube, which
// re-exports it.
var ErrDrainTimeout = errors.New("kube: the reconcile still ran when its Lease's hand-off reached Settings.LeaderElection.DrainTimeout")

// How a Lease is handed off, the single leader's at a stop and a shard's
// at a rebalance or a stop alike, modelled on client-go's leader
// election, which releases a Lease only once its holder's
// OnStartedLeading has returned, and on an external sharder's drain,
// which stops sending a shard's objects to a replica and waits for it to
// let go before another takes them:
//
//  1. The Lease's keys stop being taken: the workers stop, or the shard's
//     gate stops admitting its passes.
//  2. The elector keeps renewing the Lease while the passes in flight
//     return: its context lives on, so client-go's renew loop does too.
//  3. DrainTimeout after the hand-off began, the passes still running are
//     cancelled with ErrDrainTimeout, and waited for: a pass that ignores
//     its context keeps the Lease renewed, never overlaps the next holder.
//  4. Only then is the elector's context cancelled: client-go stops
//     renewing, and releases the Lease.
//
// A Lease lost during the drain cancels its passes at once with
// ErrLostLeadership, since another replica may hold it already.
//
// A pass that ignores its cancel keeps its Lease (a shard's, or the
// single leader's) for as long as it runs, and no replica reconciles the
// objects the Lease guards meanwhile: safety
// (never two at once) comes before liveness. It is made visible and
// recoverable instead: a RetryPeriod after DrainTimeout, each such pass is
// reported (Recorder.HandOffStuck, naming its key and how long it has
// run), and Stuck fails, which the controller's liveness check reports,
// so the kubelet restarts the pod: the process ends, and its Leases are
// released or expire. Stuck is nil again once the pass has returned.

// stopping is the key Stuck files a stop's stuck passes under, beside
// the shards' hand-offs.
const stopping = -1

// drain is a stop's hand-off of the controller's Lease, or of every shard
// it holds: it stops the workers taking keys, and waits for the passes in
// flight to return, as awaitDrain does: cancelled with ErrDrainTimeout
// once DrainTimeout has passed, reported stuck a RetryPeriod beyond. The
// Lease is renewed meanwhile: its caller stops electing only after.
func (c *Controller) drain(w *crew) {
	w.stop()
	// The waiter is drain's own: drain returns only once it has.
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.wait()
	}()
	c.awaitDrain(stopping, done, func() { w.cancel(ErrDrainTimeout) }, w.gate.all, nil, nil)
}

// handOff drains shard s, whose Lease the replica holds until leading
// ends: its passes stop being admitted, and those in flight return with
// the Lease still renewed, or are cancelled with ErrDrainTimeout once
// DrainTimeout has passed. It returns once none is in flight. When
// leading ends with electing alive, the Lease is lost: handOff cancels
// the passes at once with ErrLostLeadership, and reports true.
func (r *sharded) handOff(leading, electing context.Context, s int) bool {
	empty := r.gate.leave(s)
	defer r.gate.forget(s)
	count := r.c.c.Shards
	lost := false
	r.c.awaitDrain(s, empty,
		func() { r.gate.cancel(s, fmt.Errorf("shard %d of %d: %w", s, count, ErrDrainTimeout)) },
		func() []gatedPass { return r.gate.draining(s) },
		leading.Done(), func() {
			if electing.Err() == nil {
				lost = true
				r.gate.cancel(s, fmt.Errorf("shard %d of %d: %w", s, count, ErrLostLeadership))
			}
		})
	return lost
}

// awaitDrain is every hand-off's wait, filed under id (a shard, or
// stopping): it returns once empty is closed. DrainTimeout after it began
// (never, when that is 0), it cancels the passes in flight with cancel;
// a RetryPeriod later, it reports those still in flight (stick), and Stuck
// fails until it returns. ended, when not nil, calls onEnded once closed.
func (c *Controller) awaitDrain(id int, empty <-chan struct{}, cancel func(), inFlight func() []gatedPass, ended <-chan struct{}, onEnded func()) {
	var expired chan struct{}
	if d := c.c.DrainTimeout; d > 0 {
		expired = make(chan struct{})
		stop := c.c.Clock.AfterFunc(d, func() { close(expired) })
		defer stop()
	}
	var stuck chan struct{}
	defer c.unstick(id)
	for {
		select {
		case <-empty:
			return
		case <-expired:
			expired = nil
			cancel()
			stuck = make(chan struct{})
			stop := c.c.Clock.AfterFunc(c.c.Lease.RetryPeriod, func() { close(stuck) })
			defer stop()
		case <-stuck:
			stuck = nil
			c.stick(id, inFlight())
		case <-ended:
			ended = nil
			onEnded()
		}
	}
}

// stick reports passes still running a grace after the hand-off filed
// under id cancelled them, and makes Stuck fail until unstick(id).
func (c *Controller) stick(id int, passes []gatedPass) {
	if len(passes) == 0 {
		return
	}
	now := c.c.Clock.Now()
	keys := make([]string, 0, len(passes))
	longest := time.Duration(0)
	for _, p := range passes {
		running := now.Sub(p.started)
		longest = max(longest, running)
		c.c.Recorder.HandOffStuck(context.Background(), p.key, p.shard, c.c.Shards, running)
		keys = append(keys, p.key.String())
	}
	slices.Sort(keys)
	what := fmt.Sprintf("shard %d of %d", id, c.c.Shards)
	switch {
	case id == stopping && c.c.Shards > 0:
		what = "the stop's hand-off of its shards"
	case id == stopping:
		what = "the stop's hand-off of its Lease"
	}
	c.stuckMu.Lock()
	defer c.stuckMu.Unlock()
	if c.stuck == nil {
		c.stuck = map[int]error{}
	}
	c.stuck[id] = fmt.Errorf("controller %s: %s: the reconcile of %s ignored the hand-off's cancel at DrainTimeout %v and still ran %v after it began: the Lease is kept and no object it guards reconciled until it returns",
		c.c.Name, what, strings.Join(keys, ", "), c.c.DrainTimeout, longest)
}

// unstick forgets the stuck passes filed under id: its hand-off is over.
func (c *Controller) unstick(id int) {
	c.stuckMu.Lock()
	defer c.stuckMu.Unlock()
	delete(c.stuck, id)
}

// Stuck returns nil, or an error naming each hand-off that waits on a
// pass that ignored its cancel at DrainTimeout for a RetryPeriod beyond,
// and the pass's key: a shard's, at a rebalance or a stop, or the single
// Lease's at a stop. The replica keeps the Lease and reconciles none of
// the objects it guards while the pass runs. It is the controller's
// liveness: a process that stays stuck is best restarted, which frees the
// Lease. It is safe to call from any goroutine, at any time.
func (c *Controller) Stuck() error {
	c.stuckMu.Lock()
	defer c.stuckMu.Unlock()
	shards := make([]int, 0, len(c.stuck))
	for s := range c.stuck {
		shards = append(shards, s)
	}
	slices.Sort(shards)
	errs := make([]error, 0, len(shards))
	for _, s := range shards {
		errs = append(errs, c.stuck[s])
	}
	return errors.Join(errs...)
}
