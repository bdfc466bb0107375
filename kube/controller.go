package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/domain/controller"
	domainsettings "github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/ports"
)

// ErrLostLeadership is what Serve returns when the controller lost its
// Lease while it reconciled: a renewal failed for RenewDeadline, or another
// replica took the Lease. Another replica may already be reconciling, so
// the App exits 1, and the pod campaigns again when it restarts. The
// reconciles in flight are cancelled with it as their context's cause.
var ErrLostLeadership = controller.ErrLostLeadership

// ErrDrainTimeout is the cause a reconcile's context is cancelled with
// when it still runs Settings.LeaderElection.DrainTimeout after its
// Lease's hand-off began: SIGTERM, or a rebalance that gives its shard to
// another replica. The Lease is renewed until the reconcile returns all
// the same, so it never overlaps the next holder's.
var ErrDrainTimeout = controller.ErrDrainTimeout

// ErrShardCount is what Serve returns when a sharded replica finds a
// running replica of its controller with another Settings.Shards: their
// shards' ranges overlap, so two replicas could reconcile one object at
// once. The App exits 1. Stop every replica before changing the number.
var ErrShardCount = controller.ErrShardCount

// ErrSharedIdentity is what Serve returns when a sharded replica can't
// announce itself within twice LeaseDuration and a RetryPeriod because
// another running process holds its membership Lease: two replicas share
// one Settings.LeaderElection.Identity. The App exits 1.
var ErrSharedIdentity = controller.ErrSharedIdentity

// Controller reconciles the objects of one resource: an app.Service, which
// NewController or NewKindController builds and Init returns to app.Main.
// Every replica lists and watches; the one that holds the Lease named
// Settings.Name reconciles, or, with Settings.Shards, each replica
// reconciles the objects of the shards whose Leases it holds. Its runtime
// is domain/controller's; the Controller names it and reports its errors
// as kube's.
type Controller struct {
	name    string
	gvr     schema.GroupVersionResource
	runtime *controller.Controller
	// ready is the Flag Serve marks once the caches synced, and the held
	// shards' caches synced.
	ready  health.Monitor
	logger logr.Logger
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
// Settings.Namespace or Settings.Namespaces for a cluster-scoped
// Resource; a Resource with no Group, Version, Kind or Plural, or a Scope
// that is neither Namespaced nor Cluster; a nil Setup, Client or
// Reconciler; and in parts, an Owns of
// a GVR without a Version or a Resource or owned twice, a second Finalize,
// a Finalize of another type than Object[Spec, Status], with a nil
// function, or whose finalizer isn't a qualified name with a domain, a
// second TrustScenario, or one whose annotation isn't a valid annotation
// key or whose trust is nil, an Owns option that is nil, a second
// Selector, or a Selector whose labels or fields don't parse, a
// FilterUpdates with no filter or a second one, the zero UpdateFilter, a
// FilterFunc with no name or a nil function, two filters of one Part with
// one name, a Watches of a nil Cache, of one with an
// invalid Kind or Resource or selector, or whose CacheOptions.Namespaces
// isn't a set of namespaces or is set with AllNamespaces or for a
// cluster-scoped resource, of one another Controller watches
// or watched twice, or with the zero Mapping, a nil mapping function or a
// ByIndex of an Index the Controller doesn't keep, and an Indexes of a nil
// Index, of one without a name or keys function, over another type than
// the Controller's objects, named as another, or kept by another
// Controller. It also reports each Cache and Index the Reconciler holds in
// its fields that the Controller doesn't watch or keep. It opens no
// connection: Serve does.
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
	return assemble(s, c, settings, t, rec, reconcile, parts, errs)
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
	for _, m := range k.mistakes() {
		errs = append(errs, fmt.Errorf("kube: Kind %s: %w", k.name(), m))
	}
	var reconcile func(context.Context, T) (ports.Result, error)
	if isNil(rec) {
		errs = append(errs, errors.New("kube: NewKindController: the KindReconciler is nil"))
	} else {
		reconcile = kindReconcile(rec)
	}
	t := target{gvr: k.GVR, kind: k.Kind, scope: k.Scope}
	return assemble(s, c, settings, t, rec, reconcile, parts, errs)
}

// assemble checks what both constructors share, adding its mistakes to
// errs, and builds the Controller of t's objects, decoded as T and
// reconciled by rec.
func assemble[T any](s *app.Setup, c *Client, settings Settings, t target, rec any, reconcile func(context.Context, T) (ports.Result, error), ps []Part, errs []error) (*Controller, error) {
	if s == nil {
		errs = append(errs, errors.New("kube: the Setup is nil"))
	}
	if c == nil {
		errs = append(errs, errors.New("kube: the Client is nil"))
	}
	if err := domainsettings.Validate(settings); err != nil {
		errs = append(errs, err)
	}
	if settings.Namespace != "" && t.scope == Cluster {
		errs = append(errs, fmt.Errorf("kube: Settings.Namespace: is %q, but %s is cluster-scoped, so its objects are in no namespace: want \"\"", settings.Namespace, t.kind))
	}
	if len(settings.Namespaces) > 0 && t.scope == Cluster {
		errs = append(errs, fmt.Errorf("kube: Settings.Namespaces: is %q, but %s is cluster-scoped, so its objects are in no namespace: want none", settings.Namespaces, t.kind))
	}
	p, err := partsOf[T](ps)
	if err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, unwatchedHandles(rec, p.commonParts)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cl, err := clientsOf(c)
	if err != nil {
		return nil, err
	}
	tel, err := telemetryOf(s, settings.Name, t.kind, settings.Workers)
	if err != nil {
		return nil, fmt.Errorf("kube: the controller's telemetry: %w", err)
	}
	return build(s, settings, t, handler[T]{reconcile: reconcile, finalize: p.finalize}, p.commonParts, cl, tel)
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
	return append(errs, r.Scope.mistakes()...)
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
// replica, leader or not; a sharded replica is healthy once its caches
// have synced and it has announced itself, whether or not it holds a
// shard yet, and, when the API server serves sharded watches, while the
// informer of each shard it holds has listed its objects: a shard just
// taken makes it unready until its cache is whole. It goes in the
// readiness of whatever serves the pod's probes. It may be called before
// Serve, and its Monitor never returns an error.
func (c *Controller) Synced() health.Monitor { return c.ready }

// Live returns a Monitor for the pod's liveness probe: healthy unless a
// hand-off of a Lease waits on a reconcile that ignored its cancel at
// LeaderElection.DrainTimeout for a RetryPeriod beyond: a shard's, given
// up on a rebalance or at a stop (SIGTERM, Shutdown), or an unsharded
// controller's single Lease at a stop. The replica then keeps the Lease,
// so no two replicas reconcile its objects at once, but none reconciles
// them until that reconcile returns; a failing liveness probe has the
// kubelet restart the pod, which ends the process and frees the Lease.
// Its error names the shard (or the stop), the objects and how long they
// ran; an ERROR record "reconcile stuck in a hand-off" says the same. It
// is healthy again once the reconcile returns. Put it in health.Liveness.
func (c *Controller) Live() health.Monitor {
	return health.MonitorFunc(func(context.Context) (bool, error) {
		if err := c.runtime.Stuck(); err != nil {
			return false, err
		}
		return true, nil
	})
}

// Serve runs the Controller until ctx is done, Shutdown is called, or the
// Lease is lost.
//
// It first lists the resource, and each resource an Owns or a Watches
// names, once, with a limit of 1, in each namespace it watches, and fails
// with an error that names the resource, and the namespace when it watches
// several, when one can't be listed, such as a CRD that isn't installed:
//
//	kube: listing cache.example.com/v1alpha1, Resource=memcacheds: the server could not find the requested resource
//
// It then starts the informers, limited to Settings.Namespace, or to each
// namespace of Settings.Namespaces with informers of its own (a Cache
// whose options say so watches its own namespaces, or every one), waits
// for all their caches to sync, Caches' included, and campaigns for the
// Lease. The leader's Settings.Workers workers reconcile; a standby keeps
// its caches warm. A sharded Controller (Settings.Shards) instead lists
// its Leases, failing as above when it can't, announces the replica in a
// Lease of its own, and campaigns for its share of the shards' Leases;
// its workers reconcile the objects of the shards it holds, its informer
// of the resource lists and watches only those (where the API server
// shards lists and watches), and it gives a shard up, once the
// shard's reconciles in flight have returned, when other replicas join.
// It fails with ErrShardCount beside a running replica with another
// number of shards, and with ErrSharedIdentity when another running
// process holds its membership Lease; a shard's Lease lost fails it as a
// lost Lease does.
//
// When ctx is done, the Controller stops taking keys, lets the reconciles
// in flight finish with the Lease renewed, cancels those still running
// Settings.LeaderElection.DrainTimeout after with ErrDrainTimeout, and
// only once they returned releases the Lease, stops its informers and
// returns nil; a sharded replica hands a shard off the same way on a
// rebalance. When the Lease is lost, it stops taking keys, cancels the
// reconciles in flight, and returns ErrLostLeadership. The work queue is
// shut down, never drained: the next leader lists every object. A
// reconcile's context is cancelled only by a lost Lease, DrainTimeout, a
// Shutdown whose context ends first, or Settings.ReconcileTimeout, never
// by ctx. A
// Reconciler or Finalize that ignores its context keeps its worker until
// it returns.
//
// Serve also runs the writer of the Controller's Events, which Shutdown
// flushes; when Serve returns without a Shutdown, it flushes them itself,
// for at most 5 seconds.
//
// Serve runs once: a second call fails.
func (c *Controller) Serve(ctx context.Context) error {
	return kubeError(c.runtime.Serve(klog.NewContext(ctx, c.logger)))
}

// Shutdown stops the Controller: Serve stops taking keys, waits for the
// reconciles in flight, releases the Lease and returns. It then writes
// the Events still queued, and the count of every series, within ctx.
// When ctx ends first, Shutdown cancels the reconciles in flight, waits
// for them, and returns an error that wraps ctx's; Serve then writes the
// Events still queued, within 5 seconds of its own. It returns nil at
// once when Serve never ran.
func (c *Controller) Shutdown(ctx context.Context) error {
	return kubeError(c.runtime.Shutdown(ctx))
}

// kubeError names kube in the runtime's errors, as in every other error
// the end user meets; ErrLostLeadership reads as it is.
func kubeError(err error) error {
	if err == nil || errors.Is(err, ErrLostLeadership) {
		return err
	}
	// A joined error, such as a Shutdown's whose context ended and whose
	// Events' last write failed, reads as one line each: each says kube.
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs := joined.Unwrap()
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = fmt.Errorf("kube: %w", e)
		}
		return errors.Join(out...)
	}
	return fmt.Errorf("kube: %w", err)
}
