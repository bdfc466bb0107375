package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/adapters/queue"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

// ErrLostLeadership is what Serve returns when the controller lost its
// Lease while it reconciled: a renewal failed for RenewDeadline, or another
// replica took the Lease. Another replica may already be reconciling, so
// the App exits 1, and the pod campaigns again when it restarts.
var ErrLostLeadership = errors.New("kube: the controller lost its Lease, so another replica may be reconciling")

// Controller reconciles the objects of one resource: an app.Service, which
// NewController or NewKindController builds and Init returns to app.Main.
// Every replica lists and watches; the one that holds the Lease named
// Settings.Name reconciles.
type Controller struct {
	name     string
	settings Settings
	gvr      schema.GroupVersionResource
	owner    owners.Owner
	owns     []schema.GroupVersionResource
	// finalizer is the Finalize's finalizer, "" without one.
	finalizer string
	// trust is the TrustScenario's, nil without one, and faults the App's
	// failure injector it reads scenarios with.
	trust     *scenarioTrust
	faults    *fault.Injector
	handler   ports.Handler
	writer    ports.Writer
	elector   ports.Elector
	dynamic   dynamic.Interface
	metadata  metadata.Interface
	telemetry telemetry

	synced health.Flag

	mu sync.Mutex
	// serving is set once Serve is called; stopping once Shutdown is.
	serving, stopping bool
	// stopServe ends Serve as the end of its context does.
	stopServe context.CancelFunc
	// crew is the leader's workers, once Serve has made them.
	crew *crew
	// served is closed when Serve returns.
	served chan struct{}
}

// target is what a Controller reconciles: a Resource's or a Kind's names.
type target struct {
	gvr   schema.GroupVersionResource
	kind  string
	scope Scope
}

// NewController returns the Controller that reconciles r's objects with
// rec, as settings say, through c, reporting through s's Telemetry. It
// checks everything it is given and returns one error naming every
// mistake: in settings, and the bounds between their fields; a
// Settings.Namespace for a cluster-scoped Resource; a Resource with no
// Group, Version, Kind or Plural, or a Scope that is neither Namespaced
// nor Cluster; a nil Setup, Client or Reconciler; and in parts, an Owns of
// a GVR without a Version or a Resource or owned twice, a second Finalize,
// a Finalize of another type than Object[Spec, Status], with a nil
// function, or whose finalizer isn't a qualified name with a domain, and a
// second TrustScenario, or one whose annotation isn't a valid annotation
// key or whose trust is nil. It opens no connection: Serve does.
func NewController[Spec, Status any](s *app.Setup, c *Client, settings Settings, r Resource[Spec, Status], rec Reconciler[Spec, Status], parts ...Part) (*Controller, error) {
	var errs []error
	for _, m := range r.controllerMistakes() {
		errs = append(errs, fmt.Errorf("kube: Resource %s: %w", r.name(), m))
	}
	var reconcile func(context.Context, Object[Spec, Status]) (ports.Result, error)
	if isNil(rec) {
		errs = append(errs, errors.New("kube: NewController: the Reconciler is nil"))
	} else {
		reconcile = resourceReconcile(rec)
	}
	t := target{gvr: r.GVR(), kind: r.Kind, scope: r.Scope}
	return assemble(s, c, settings, t, reconcile, parts, errs)
}

// NewKindController returns the Controller that reconciles k's objects
// with rec, as settings say, through c, reporting through s's Telemetry.
// It reports every mistake NewController does in s, c, settings and
// parts, and a GVR without a Version or a Resource, a missing Kind, a
// Scope that is neither Namespaced nor Cluster, a T whose pointer isn't a
// metav1.Object, a Settings.Namespace for a cluster-scoped Kind, and a nil
// KindReconciler, all in one error. It opens no connection: Serve does.
func NewKindController[T any](s *app.Setup, c *Client, settings Settings, k Kind[T], rec KindReconciler[T], parts ...Part) (*Controller, error) {
	var errs []error
	if err := k.validate(); err != nil {
		errs = append(errs, fmt.Errorf("kube: Kind %s: %w", k.name(), err))
	}
	var reconcile func(context.Context, T) (ports.Result, error)
	if isNil(rec) {
		errs = append(errs, errors.New("kube: NewKindController: the KindReconciler is nil"))
	} else {
		reconcile = kindReconcile(rec)
	}
	t := target{gvr: k.GVR, kind: k.Kind, scope: k.Scope}
	return assemble(s, c, settings, t, reconcile, parts, errs)
}

// assemble checks what both constructors share, adding its mistakes to
// errs, and builds the Controller of t's objects, decoded as T.
func assemble[T any](s *app.Setup, c *Client, settings Settings, t target, reconcile func(context.Context, T) (ports.Result, error), ps []Part, errs []error) (*Controller, error) {
	if s == nil {
		errs = append(errs, errors.New("kube: the Setup is nil"))
	}
	if c == nil {
		errs = append(errs, errors.New("kube: the Client is nil"))
	}
	if err := settings.validate(); err != nil {
		errs = append(errs, err)
	}
	if settings.Namespace != "" && t.scope == Cluster {
		errs = append(errs, fmt.Errorf("kube: Settings.Namespace: is %q, but %s is cluster-scoped, so its objects are in no namespace: want \"\"", settings.Namespace, t.kind))
	}
	p, err := partsOf[T](ps)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	ctrl := &Controller{
		name:      settings.Name,
		settings:  settings,
		gvr:       t.gvr,
		owner:     owners.Owner{Group: t.gvr.Group, Kind: t.kind, Namespaced: t.scope == Namespaced},
		owns:      p.owns,
		finalizer: p.finalizer,
		trust:     p.trust,
		faults:    s.Faults,
		handler:   handler[T]{reconcile: reconcile, finalize: p.finalize},
		served:    make(chan struct{}),
	}
	// Each client takes a Config of its own, as Client.Config returns.
	if ctrl.dynamic, err = dynamic.NewForConfig(c.Config()); err != nil {
		errs = append(errs, fmt.Errorf("kube: the dynamic client: %w", err))
	}
	if ctrl.metadata, err = metadata.NewForConfig(c.Config()); err != nil {
		errs = append(errs, fmt.Errorf("kube: the metadata client: %w", err))
	}
	leases, err := coordinationv1client.NewForConfig(c.Config())
	if err != nil {
		errs = append(errs, fmt.Errorf("kube: the Lease client: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	le := settings.LeaderElection
	if ctrl.elector, err = lease.New(lease.Config{
		Client:        leases,
		Name:          settings.Name,
		Namespace:     le.Namespace,
		Identity:      le.Identity,
		LeaseDuration: le.LeaseDuration,
		RenewDeadline: le.RenewDeadline,
		RetryPeriod:   le.RetryPeriod,
	}); err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	if ctrl.writer, err = apply.New(apply.Config{Client: ctrl.dynamic, GVR: t.gvr, Kind: t.kind, FieldManager: settings.Name}); err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	if ctrl.telemetry, err = telemetryOf(s, settings.Name, t.kind); err != nil {
		return nil, fmt.Errorf("kube: the controller's telemetry: %w", err)
	}
	return ctrl, nil
}

// controllerMistakes returns what a Controller can't reconcile r's
// objects without: its names and a valid Scope.
func (r Resource[Spec, Status]) controllerMistakes() []error {
	var errs []error
	for _, f := range []struct{ name, value string }{
		{"Group", r.Group}, {"Version", r.Version}, {"Kind", r.Kind}, {"Plural", r.Plural},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("the %s is missing", f.name))
		}
	}
	if !r.Scope.valid() {
		errs = append(errs, fmt.Errorf("the Scope %q is neither Namespaced nor Cluster", r.Scope))
	}
	return errs
}

// name names the Kind in errors: by its Kind, or by its Go type when the
// Kind is missing.
func (k Kind[T]) name() string {
	if k.Kind != "" {
		return k.Kind
	}
	return reflect.TypeFor[Kind[T]]().String()
}

// isNil reports whether v is nil, or a nil pointer or function, which
// would panic on the first reconcile.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func:
		return rv.IsNil()
	}
	return false
}

// String names the Controller, as the App's records about it do.
func (c *Controller) String() string {
	return fmt.Sprintf("kube controller %s (%s)", c.name, c.gvr)
}

// Synced returns a Monitor that is unhealthy until the Controller's
// caches have synced, and healthy from then until Serve returns, on every
// replica, leader or not. It goes in the readiness of whatever serves the
// pod's probes. It may be called before Serve, and its Monitor never
// returns an error.
func (c *Controller) Synced() health.Monitor { return &c.synced }

// Serve runs the Controller until ctx is done, Shutdown is called, or the
// Lease is lost.
//
// It first lists the resource, and each resource an Owns names, once,
// with a limit of 1, and fails with an error that names the resource when
// one can't be listed, such as a CRD that isn't installed:
//
//	kube: listing cache.example.com/v1alpha1, Resource=memcacheds: the server could not find the requested resource
//
// It then starts the informers, limited to Settings.Namespace, waits for
// their caches to sync, and campaigns for the Lease. The leader's
// Settings.Workers workers reconcile; a standby keeps its caches warm.
//
// When ctx is done, the Controller stops taking keys, lets the reconciles
// in flight finish, releases the Lease, stops its informers and returns
// nil. When the Lease is lost, it stops taking keys, cancels the
// reconciles in flight, and returns ErrLostLeadership. The work queue is
// shut down, never drained: the next leader lists every object. A
// reconcile's context is cancelled only by a lost Lease or a Shutdown
// whose context ends first, never by ctx.
//
// Serve runs once: a second call fails.
func (c *Controller) Serve(ctx context.Context) error {
	ctx = klog.NewContext(ctx, c.telemetry.logger)
	// stop ends when ctx does or Shutdown is called; background outlives
	// it, with ctx's values, for what must finish after a stop.
	stop, stopServe := context.WithCancel(ctx)
	defer stopServe()
	background := context.WithoutCancel(ctx)
	if err := c.begin(stopServe); err != nil {
		return err
	}
	defer close(c.served)
	defer c.synced.MarkUnhealthy()
	if stop.Err() != nil {
		return nil
	}
	// The spec's bounds on the Lease timings leave this one out, so it is
	// a warning rather than a mistake: docs/reliability.md has the fence.
	if le := c.settings.LeaderElection; le.LeaseDuration <= le.RenewDeadline+le.RetryPeriod {
		c.telemetry.unfenced(ctx, le.LeaseDuration, le.RenewDeadline, le.RetryPeriod)
	}

	if err := c.list(stop); err != nil {
		if stop.Err() != nil {
			return nil
		}
		return err
	}

	q := queue.New(queue.Config{
		Name:    c.name,
		Policy:  c.policy(),
		Metrics: c.telemetry.metrics,
		Logger:  c.telemetry.logger,
	})
	defer q.ShutDown()
	source, informers, err := c.informers(q.Add)
	if err != nil {
		return err
	}
	running := informer.Start(background, informers...)
	defer running.Stop()
	if !running.WaitForSync(stop) {
		return nil
	}
	c.synced.MarkHealthy()

	loop, err := reconcile.New(reconcile.Config{
		Source:    source,
		Writer:    c.writer,
		Queue:     q,
		Handler:   c.handler,
		Recorder:  c.telemetry.recorder,
		Clock:     clock.RealClock{},
		Finalizer: c.finalizer,
		Prepare:   scenarioPrepare(c.trust, c.faults, c.telemetry.recorder),
	})
	if err != nil {
		return fmt.Errorf("kube: controller %s: %w", c.name, err)
	}
	reconciling, cancelReconciles := context.WithCancelCause(background)
	defer cancelReconciles(nil)
	w := &crew{loop: loop, ctx: reconciling, cancel: cancelReconciles}
	if !c.hire(w) {
		return nil
	}

	electing, stopElecting := context.WithCancel(background)
	defer stopElecting()
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		c.elector.Run(electing, func(leading context.Context) {
			if !w.start(c.settings.Workers) {
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
		// Stop taking keys, let the reconciles in flight finish, and only
		// then release the Lease.
		w.stop()
		w.wait()
		stopElecting()
		<-elected
	case <-elected:
		// The elector returned with electing alive: the Lease is lost.
		w.lose()
		w.wait()
	}
	if w.lost.Load() {
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
		return fmt.Errorf("kube: controller %s: Serve was called again: a Controller serves once", c.name)
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

// Shutdown stops the Controller: Serve stops taking keys, waits for the
// reconciles in flight, releases the Lease and returns. When ctx ends
// first, Shutdown cancels the reconciles in flight, waits for them, and
// returns an error that wraps ctx's. It returns nil at once when Serve
// never ran.
func (c *Controller) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	c.stopping = true
	serving, w := c.serving, c.crew
	if c.stopServe != nil {
		c.stopServe()
	}
	c.mu.Unlock()
	if !serving {
		return nil
	}
	select {
	case <-c.served:
		return nil
	case <-ctx.Done():
	}
	err := fmt.Errorf("kube: controller %s: shutdown: %w", c.name, ctx.Err())
	c.mu.Lock()
	if w == nil {
		w = c.crew
	}
	c.mu.Unlock()
	if w != nil {
		w.stop()
		w.cancel(err)
		w.wait()
	}
	return err
}

// list lists the resource and each owned resource once, with a limit of
// 1, so a resource the API server doesn't serve fails Serve at once.
func (c *Controller) list(ctx context.Context) error {
	opts := metav1.ListOptions{Limit: 1}
	if _, err := c.dynamic.Resource(c.gvr).Namespace(c.settings.Namespace).List(ctx, opts); err != nil {
		return fmt.Errorf("kube: listing %s: %w", c.gvr, err)
	}
	for _, gvr := range c.owns {
		if _, err := c.metadata.Resource(gvr).Namespace(c.settings.Namespace).List(ctx, opts); err != nil {
			return fmt.Errorf("kube: listing %s: %w", gvr, err)
		}
	}
	return nil
}

// informers returns the cache of the resource's objects and every
// informer to run, each queueing keys with enqueue.
func (c *Controller) informers(enqueue func(ports.Key)) (ports.ObjectSource, []cache.SharedIndexInformer, error) {
	cfg := informer.Config{
		Namespace: c.settings.Namespace,
		Resync:    c.settings.Resync,
		Enqueue:   enqueue,
		Logger:    c.telemetry.logger,
	}
	primary, err := informer.NewPrimary(c.dynamic, c.gvr, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("kube: controller %s: %w", c.name, err)
	}
	all := []cache.SharedIndexInformer{primary.Informer()}
	// The resource's own resync reconciles every owner already.
	cfg.Resync = 0
	for _, gvr := range c.owns {
		o, err := informer.NewOwned(c.metadata, gvr, c.owner, cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("kube: controller %s: %w", c.name, err)
		}
		all = append(all, o.Informer())
	}
	return primary, all, nil
}

// policy is the backoff of Settings' retries, under client-go's overall
// limit of 10 retries a second, bursting to 100.
func (c *Controller) policy() backoff.Policy {
	p := backoff.Default()
	p.BaseDelay, p.MaxDelay = c.settings.RetryBaseDelay, c.settings.RetryMaxDelay
	return p
}

// crew is the leader's workers, each taking keys from the loop until it
// stops.
type crew struct {
	loop   *reconcile.Loop
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	stopped bool
	wg      sync.WaitGroup
	lost    atomic.Bool
}

// start starts n workers, and reports whether it did: not once the crew
// has stopped.
func (w *crew) start(n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	for range n {
		w.wg.Go(func() {
			for w.loop.Next(w.ctx) {
			}
		})
	}
	return true
}

// stop stops the workers taking keys; the reconciles in flight go on.
func (w *crew) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.loop.Stop()
}

// lose stops the workers and cancels the reconciles in flight, since the
// Lease is lost.
func (w *crew) lose() {
	w.lost.Store(true)
	w.stop()
	w.cancel(ErrLostLeadership)
}

// wait waits for every worker to return. Call it only after stop.
func (w *crew) wait() { w.wg.Wait() }
