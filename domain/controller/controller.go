// Package controller is a controller's runtime: its life from Serve to
// the end. It checks that the API server serves what the controller
// watches, starts the informers and waits for their caches, campaigns for
// the Lease, runs the leader's workers over the work queue, and stops —
// finishing the reconciles in flight on a stop, cancelling them on a lost
// Lease or a Shutdown whose context ends first. One pass over a key is
// domain/reconcile's; everything around it is here.
//
// It drives ports only, so it is tested with their mocks in synctest
// bubbles; the kube facade builds its Config from client-go's adapters.
package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/domain/shard"
	"github.com/loam-dev/loam/ports"
)

// ErrLostLeadership is what Serve returns when the controller lost its
// Lease while it reconciled: a renewal failed for RenewDeadline, or another
// replica took the Lease. Another replica may already be reconciling, so
// the App exits 1, and the pod campaigns again when it restarts. The
// reconciles in flight are cancelled with it as their context's cause. Its
// text names kube, the package that re-exports it, where the end user
// meets it.
var ErrLostLeadership = errors.New("kube: the controller lost its Lease, so another replica may be reconciling")

// Lease is the timings of the controller's Lease, which the Elector
// campaigns with; the runtime reads them only to warn of timings that
// don't fence leadership.
type Lease struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Config is what a Controller drives.
type Config struct {
	// Name names the controller in its errors.
	Name string
	// Workers is how many reconciles the leader runs at once.
	Workers int
	// Watch is the controller's informers and the cache of its objects.
	Watch ports.Watch
	// NewQueue returns the work queue, once Serve has checked that the
	// resources are served; the queue may start goroutines of its own,
	// which its ShutDown stops, so none is made for a Controller that
	// never serves.
	NewQueue func() ports.Queue
	// Elector campaigns for the Lease. A sharded controller has none.
	Elector ports.Elector
	// Shards, when above zero, shards the controller's objects: every
	// replica reconciles the objects of the shards it holds, each through
	// a Lease of ShardLeases, instead of one leader reconciling them all.
	// It is a power of two; 0 shards nothing.
	Shards int
	// ShardLeases are a sharded controller's Leases; nil when Shards is
	// 0.
	ShardLeases ports.ShardLeases
	// Writer applies statuses and the finalizer.
	Writer ports.Writer
	// Handler runs the end user's code.
	Handler ports.Handler
	// Recorder is told of every reconcile, and of unfenced Lease timings.
	Recorder ports.Recorder
	// Clock times reconciles and runs the retries' and Afters' timers.
	Clock ports.Clock
	// Ready is told when the caches have synced, and when Serve returns.
	Ready ports.Readiness
	// Retry spaces the retries of a key whose pass failed.
	Retry backoff.Policy
	// Lease is the Elector's timings.
	Lease Lease
	// DrainTimeout bounds a Lease's hand-off (handoff.go): the passes
	// still in flight that long after the hand-off began, at a stop or a
	// shard's rebalance, are cancelled with ErrDrainTimeout; the Lease is
	// renewed until they return either way. 0 cancels none.
	DrainTimeout time.Duration
	// Finalizer is the Finalize's finalizer, "" without one.
	Finalizer string
	// Prepare, when not nil, runs first in every pass that does something.
	Prepare reconcile.Prepare
	// Until, when not nil, says when what Prepare carried into a pass
	// stops applying; see reconcile.Config.Until.
	Until func(ctx context.Context) (time.Time, bool)
	// Carried, when not nil, says whether Prepare carried something into
	// a pass; see reconcile.Config.Carried.
	Carried func(ctx context.Context) bool
	// Lifts, when not nil, is handed the reconcile loop's Lift once the
	// loop exists, to call each time what Prepare carries stops applying
	// everywhere at once, such as when failure injection is turned off,
	// and returns what stops those calls, which Serve calls before the
	// loop stops.
	Lifts func(lift func()) (stop func())
	// ReconcileTimeout bounds each call of the end user's Reconcile and
	// Finalize, as reconcile.Config's Timeout does; 0 bounds nothing.
	ReconcileTimeout time.Duration
	// Events, when not nil, records a Warning Event on the object of
	// every pass that failed, timed out or panicked, as reconcile.Config's
	// Events does; nil records none.
	Events ports.Events
	// Gates hold Serve, before its first check, until each is open or its
	// Bound passes, in turn; none holds nothing. A Gate whose Retries
	// accepts an error of the first check has it retried (retry.go).
	Gates []Gate
	// FindGates, when not nil, is called once at the start of Serve for
	// more Gates, held as Gates are: those of what the App made besides
	// the Controller, such as its webhooks, which may be made after it.
	FindGates func() []Gate
	// EventWriter, when not nil, writes the Events the controller
	// records, Events' and the end user's: Serve starts it, and closes it
	// last, once the workers have returned, the Lease is released and the
	// informers stopped: within Shutdown's context when Shutdown stops
	// Serve, within EventsFlushTimeout when Serve returns on its own or
	// Shutdown's context ends before Serve has stopped (a close within
	// an ended context would write nothing).
	EventWriter ports.EventWriter
}

// EventsFlushTimeout bounds the final write of a controller's Events when
// its Serve returns without a Shutdown, whose context bounds it otherwise:
// a process that ends on its own still writes its last failures, but
// never waits long on an API server that doesn't answer.
const EventsFlushTimeout = 5 * time.Second

// Controller runs one controller's life. Serve runs it once; Shutdown
// stops it.
type Controller struct {
	c Config

	mu sync.Mutex
	// serving is set once Serve is called; stopping once Shutdown is.
	serving, stopping bool
	// closesEvents is set once a Shutdown that saw Serve run is to close
	// the EventWriter, within its own context, so Serve leaves it to it;
	// eventsDecided once Serve has read it, at the end of its stop.
	closesEvents, eventsDecided bool
	// stopServe ends Serve as the end of its context does.
	stopServe context.CancelFunc
	// crew is the leader's workers, once Serve has made them.
	crew *crew
	// served is closed when Serve returns.
	served chan struct{}

	// stuck is, for each shard whose hand-off waits on passes that
	// ignored their cancel, what Stuck reports (handoff.go).
	stuckMu sync.Mutex
	stuck   map[int]error
}

// New returns the Controller that c describes. It fails, naming each, when
// a port is missing, Workers isn't positive, Shards isn't 0 or a power of
// two up to shard.MaxCount, or a Gate has no Open or a
// Bound that isn't positive.
func New(c Config) (*Controller, error) {
	var errs []error
	for _, p := range []struct {
		name string
		nil  bool
	}{
		{"Watch", c.Watch == nil},
		{"NewQueue", c.NewQueue == nil},
		{"Elector", c.Elector == nil && c.Shards == 0},
		{"ShardLeases", c.ShardLeases == nil && c.Shards > 0},
		{"Writer", c.Writer == nil},
		{"Handler", c.Handler == nil},
		{"Recorder", c.Recorder == nil},
		{"Clock", c.Clock == nil},
		{"Ready", c.Ready == nil},
	} {
		if p.nil {
			errs = append(errs, fmt.Errorf("controller %s: Config.%s is nil", c.Name, p.name))
		}
	}
	if c.Shards != 0 {
		if err := shard.CheckCount(c.Shards); err != nil {
			errs = append(errs, fmt.Errorf("controller %s: Config.Shards %w", c.Name, err))
		}
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("controller %s: Config.Workers is %d: want at least 1", c.Name, c.Workers))
	}
	errs = append(errs, c.gateMistakes())
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Controller{c: c, served: make(chan struct{})}, nil
}

// Serve runs the Controller until ctx is done, Shutdown is called, or the
// Lease is lost.
//
// It first waits for its Gates, each at most its Bound. It then checks,
// through the Watch, that the API server serves every
// resource the Controller watches, and fails with the Watch's error when
// one isn't. It then starts the informers, waits for their caches to sync,
// tells Ready, and campaigns for the Lease. The leader's workers reconcile;
// a standby keeps its caches warm.
//
// When ctx is done or Shutdown is called, the Controller stops taking
// keys, lets the reconciles in flight finish with the Lease renewed,
// cancels those still running DrainTimeout after with ErrDrainTimeout,
// and only once they returned releases the Lease, stops its informers
// and returns nil (handoff.go). When the Lease is lost, it stops taking
// keys, cancels the reconciles in flight, and returns an error that wraps
// ErrLostLeadership. The work queue is shut down, never drained, and the
// pending retries and Afters are dropped: the next leader lists every
// object. A reconcile's context is cancelled only by a lost Lease,
// DrainTimeout, a Shutdown whose context ends first, or its
// ReconcileTimeout, never by ctx. A reconciler that ignores its context keeps its worker until it
// returns, cancelled or not.
//
// Serve runs once: a second call fails.
func (c *Controller) Serve(ctx context.Context) error {
	// stop ends when ctx does or Shutdown is called; background outlives
	// it, with ctx's values, for what must finish after a stop.
	stop, stopServe := context.WithCancel(ctx)
	defer stopServe()
	background := context.WithoutCancel(ctx)
	if err := c.begin(stopServe); err != nil {
		return err
	}
	defer close(c.served)
	if c.c.EventWriter != nil {
		c.c.EventWriter.Start()
		// Deferred before anything else, so it runs once everything else
		// has stopped: no pass records an Event after it.
		defer c.closeEventsAlone(background)
	}
	defer c.c.Ready.MarkUnhealthy()
	// A Watch that never starts is stopped all the same, on every return
	// before its Start: its Stop withdraws what it claimed of its Client's
	// shared stores, which would else shape them for the Client's life.
	started := false
	defer func() {
		if !started {
			c.c.Watch.Stop()
		}
	}()
	if stop.Err() != nil {
		return nil
	}
	if le := c.c.Lease; !settings.Fenced(le.LeaseDuration, le.RenewDeadline, le.RetryPeriod) {
		c.c.Recorder.LeaderElectionUnfenced(ctx, le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
	}
	gates := c.gates()
	if !c.await(stop, gates) {
		return nil
	}
	// A sharded replica lists its controller's Leases first: the Watch's
	// check lists one of them to find out whether the API server serves
	// sharded lists, and a missing permission to list them is the
	// Leases' failure, named so.
	if c.c.Shards > 0 {
		if err := c.c.ShardLeases.Check(stop); err != nil {
			if stop.Err() != nil {
				return nil
			}
			return fmt.Errorf("controller %s: %w", c.c.Name, err)
		}
	}
	if err := c.check(stop, gates); err != nil {
		if stop.Err() != nil {
			return nil
		}
		return err
	}

	// Sharded or not, the gate counts the passes in flight, for a stop's
	// stuck passes' report; an unsharded controller's holds its one shard.
	gate := newShardGate(c.c.Shards, c.c.Clock.Now)
	if c.c.Shards == 0 {
		gate.hold(0)
	}
	loop, err := c.loop(gate)
	if err != nil {
		return err
	}
	// Stopping the loop shuts its queue down, and drops its timers.
	defer loop.Stop()
	if c.c.Lifts != nil {
		defer c.c.Lifts(loop.Lift)()
	}
	c.c.Watch.Start(background, loop.Notify)
	started = true
	defer c.c.Watch.Stop()
	if !c.c.Watch.WaitForSync(stop) {
		return nil
	}

	reconciling, cancelReconciles := context.WithCancelCause(background)
	defer cancelReconciles(nil)
	w := &crew{loop: loop, gate: gate, ctx: reconciling, cancel: cancelReconciles}
	if !c.hire(w) {
		return nil
	}
	if c.c.Shards > 0 {
		// Ready once the replica has announced itself.
		return c.shard(stop, background, w, gate, loop)
	}
	c.c.Ready.MarkHealthy()
	return c.lead(stop, background, w)
}

// loop returns the reconcile loop over a new work queue, whose passes
// gate admits.
func (c *Controller) loop(gate *shardGate) (*reconcile.Loop, error) {
	q := c.c.NewQueue()
	loop, err := reconcile.New(reconcile.Config{
		Name:      c.c.Name,
		Admit:     gate.admit,
		Source:    c.c.Watch,
		Writer:    c.c.Writer,
		Queue:     q,
		Handler:   c.c.Handler,
		Recorder:  c.c.Recorder,
		Clock:     c.c.Clock,
		Retry:     c.c.Retry,
		Finalizer: c.c.Finalizer,
		Prepare:   c.c.Prepare,
		Until:     c.c.Until,
		Carried:   c.c.Carried,
		Timeout:   c.c.ReconcileTimeout,
		Events:    c.c.Events,
	})
	if err != nil {
		q.ShutDown()
		return nil, fmt.Errorf("controller %s: %w", c.c.Name, err)
	}
	return loop, nil
}

// lead campaigns for the Lease and runs w while leading, until stop ends
// or the Lease is lost.
func (c *Controller) lead(stop, background context.Context, w *crew) error {
	electing, stopElecting := context.WithCancel(background)
	defer stopElecting()
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		c.c.Elector.Run(electing, func(leading context.Context) {
			if !w.start(c.c.Workers) {
				return
			}
			<-leading.Done()
			if electing.Err() == nil {
				// Leadership ended without Serve asking: the Lease is
				// lost, and another replica may reconcile already.
				w.lose()
			}
			w.wait()
		}, func() {})
	}()

	select {
	case <-stop.Done():
		// Stop taking keys, let the reconciles in flight finish with the
		// Lease renewed, and only then release it.
		c.drain(w)
		stopElecting()
		<-elected
	case <-elected:
		// The elector returned with electing alive: the Lease is lost.
		w.lose()
		w.wait()
	}
	if w.hasLost() {
		return ErrLostLeadership
	}
	return nil
}

// begin records that Serve runs, and how Shutdown stops it. It fails when
// Serve has run before.
func (c *Controller) begin(stopServe context.CancelFunc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.serving {
		return fmt.Errorf("controller %s: Serve was called again: a Controller serves once", c.c.Name)
	}
	c.serving = true
	c.stopServe = stopServe
	if c.stopping {
		stopServe()
	}
	return nil
}

// hire records the leader's workers, for Shutdown to cancel, and reports
// whether Serve goes on: not once Shutdown was called.
func (c *Controller) hire(w *crew) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crew = w
	return !c.stopping
}

// closeEventsAlone closes the EventWriter once Serve has stopped
// everything else, within EventsFlushTimeout, unless a Shutdown closes it
// within its own context. A failed write is the writer's to report, as
// every one of its writes is: Serve's result is the controller's.
func (c *Controller) closeEventsAlone(ctx context.Context) {
	c.mu.Lock()
	c.eventsDecided = true
	shutdown := c.closesEvents
	c.mu.Unlock()
	if shutdown {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, EventsFlushTimeout)
	defer cancel()
	_ = c.c.EventWriter.Close(ctx)
}

// closeEvents closes the EventWriter within ctx, when there is one.
func (c *Controller) closeEvents(ctx context.Context) error {
	if c.c.EventWriter == nil {
		return nil
	}
	if err := c.c.EventWriter.Close(ctx); err != nil {
		return fmt.Errorf("controller %s: writing its last events: %w", c.c.Name, err)
	}
	return nil
}

// Shutdown stops the Controller: Serve stops taking keys, waits for the
// reconciles in flight, releases the Lease and returns. Shutdown then
// writes the Events still queued, and the count of every series, within
// ctx. When ctx ends first, Shutdown cancels the reconciles in flight,
// waits for them, and returns an error that wraps ctx's. It returns nil at
// once when Serve never ran.
func (c *Controller) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	c.stopping = true
	serving := c.serving
	c.closesEvents = c.closesEvents || serving
	if c.stopServe != nil {
		c.stopServe()
	}
	c.mu.Unlock()
	if !serving {
		return nil
	}
	select {
	case <-c.served:
		return c.closeEvents(ctx)
	case <-ctx.Done():
	}
	err := fmt.Errorf("controller %s: shutdown: %w", c.c.Name, ctx.Err())
	c.mu.Lock()
	// ctx has ended, so a close within it would write nothing of what is
	// queued, the Warning Events of the passes cancelled below among
	// them: Serve, still stopping, writes them within EventsFlushTimeout
	// of its own, as when it returns alone.
	handBack := !c.eventsDecided
	if handBack {
		c.closesEvents = false
	}
	w := c.crew
	c.mu.Unlock()
	if w != nil {
		w.stop()
		w.cancel(err)
		w.wait()
	}
	if handBack {
		return err
	}
	// Serve had already left the Events to this Shutdown when ctx ended.
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), EventsFlushTimeout)
	defer cancel()
	return errors.Join(err, c.closeEvents(flush))
}
