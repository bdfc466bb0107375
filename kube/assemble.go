package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"k8s.io/client-go/dynamic"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/metadata"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/adapters/clock"
	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/adapters/queue"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/domain/controller"
	"github.com/loam-dev/loam/ports"
)

// clients is what a Controller talks to the API server through.
type clients struct {
	dynamic  dynamic.Interface
	metadata metadata.Interface
	elector  func(lease.Config) (ports.Elector, error)
	shards   func(lease.ShardsConfig) (ports.ShardLeases, error)
	writer   func(apply.Config) (ports.Writer, error)
	// informers is the Client's registry of informers, which every
	// Controller built on the Client draws its informers from: nil gives
	// each Controller a registry of its own.
	informers *informer.Registry
	// events creates and patches the Controller's Events: nil records
	// none.
	events eventsv1client.EventsGetter
}

// clientsOf returns the clients of c, each on a Config of its own, as
// Client.Config returns.
func clientsOf(c *Client) (clients, error) {
	var errs []error
	// The primary informer's client decodes listed and watched objects
	// straight into its cache's form.
	dyn, err := informer.NewDynamicClient(c.Config())
	if err != nil {
		errs = append(errs, fmt.Errorf("kube: the dynamic client: %w", err))
	}
	meta, err := metadata.NewForConfig(c.Config())
	if err != nil {
		errs = append(errs, fmt.Errorf("kube: the metadata client: %w", err))
	}
	leases, err := coordinationv1client.NewForConfig(c.Config())
	if err != nil {
		errs = append(errs, fmt.Errorf("kube: the Lease client: %w", err))
	}
	// On the Client's transport, so Events are traced, measured and
	// injected with faults as every other request is.
	evs, err := eventsv1client.NewForConfig(c.Config())
	if err != nil {
		errs = append(errs, fmt.Errorf("kube: the events client: %w", err))
	}
	return clients{
		dynamic:   dyn,
		metadata:  meta,
		informers: c.informers,
		events:    evs,
		elector: func(lc lease.Config) (ports.Elector, error) {
			lc.Client = leases
			return lease.New(lc)
		},
		shards: func(sc lease.ShardsConfig) (ports.ShardLeases, error) {
			sc.Client = leases
			return lease.NewShards(sc)
		},
		writer: func(ac apply.Config) (ports.Writer, error) {
			// A REST client of its own, which reads no more of an answer
			// than the writer uses, on the Client's transport.
			applies, err := apply.NewClient(c.Config())
			if err != nil {
				return nil, fmt.Errorf("the apply client: %w", err)
			}
			ac.Client = applies
			return apply.New(ac)
		},
	}, errors.Join(errs...)
}

// build wires the adapters on cl into the runtime of a Controller of t's
// objects, handled by h, as settings and p say, reporting through tel and
// recording Events through cl's events client, when it has one.
func build(s *app.Setup, settings Settings, t target, h ports.Handler, p commonParts, cl clients, tel telemetry) (*Controller, error) {
	ev, err := eventsOf(cl, settings, t, tel, h)
	if err != nil {
		return nil, err
	}
	le := settings.LeaderElection
	elector, shardLeases, err := electorsOf(settings, cl, tel)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	writer, err := cl.writer(apply.Config{GVR: t.gvr, Kind: t.kind, FieldManager: settings.Name})
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	watch, err := watchOf(settings, t, p, cl, tel)
	if err != nil {
		return nil, err
	}
	synced := &health.Flag{}
	rt, err := controller.New(controller.Config{
		Name:        settings.Name,
		Workers:     settings.Workers,
		Watch:       watch,
		NewQueue:    queueOf(settings, tel, watch),
		Elector:     elector,
		Shards:      settings.Shards,
		ShardLeases: shardLeases,
		Writer:      writer,
		Handler:     ev.handler,
		Recorder:    tel.recorder,
		Clock:       clock.Real{},
		Ready:       synced,
		Retry:       backoff.Of(settings),
		Lease:       controller.Lease{LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod},
		Finalizer:   p.finalizer,
		Prepare:     scenarioPrepare(p.trust, s.Faults, tel.recorder),
		Until:       scenarioUntil(p.trust, s.Faults),
		Carried:     scenarioCarried(p.trust, s.Faults),
		Lifts:       scenarioLifts(p.trust, s.Faults),

		// NewController checked it is above zero: every call is bounded.
		ReconcileTimeout: settings.ReconcileTimeout,
		Events:           ev.failures,
		EventWriter:      ev.writer,
		Gates:            gatesOf(s, settings.Name, p.awaits), FindGates: findGatesOf(s, settings.Name, p.awaits),

		// NewController checked it is at least RetryPeriod.
		DrainTimeout: le.DrainTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	if err := bindHandles(settings.Name, settings, p, watch); err != nil {
		return nil, err
	}
	// A sharded Watch's primary cache is each held shard's, when the
	// server shards watches: whole once each has listed.
	caches := health.MonitorFunc(func(context.Context) (bool, error) { return watch.Primary().Synced(), nil })
	return &Controller{name: settings.Name, gvr: t.gvr, runtime: rt, ready: health.All(synced, caches), logger: tel.logger}, nil
}

// queueOf returns what makes the Controller's work queue once Serve
// needs it: client-go's, named settings.Name and measured through tel; a
// sharded Controller's records each key's wait with the shard of the
// object watch caches for it.
func queueOf(settings Settings, tel telemetry, watch *informer.Watch) func() ports.Queue {
	return func() ports.Queue {
		qc := queue.Config{Name: settings.Name, Metrics: tel.metrics}
		if settings.Shards > 0 && tel.shardedQueue != nil {
			qc.Keys = tel.shardedQueue(settings.Shards)
			qc.Shard = watch.ShardOf(settings.Shards)
		}
		return queue.New(qc)
	}
}

// electorsOf returns what elects the replicas that reconcile, on cl, the
// Lease recording its holder on tel's leaderStatus when not nil: the Lease
// named settings.Name, or, when settings shard the controller, its shards'
// and replicas' Leases, each shard's recording its own, and tel recording
// that the replica holds no shard yet.
func electorsOf(settings Settings, cl clients, tel telemetry) (ports.Elector, ports.ShardLeases, error) {
	le, meters := settings.LeaderElection, tel.leaderStatus
	if settings.Shards == 0 {
		e, err := cl.elector(lease.Config{
			Name: settings.Name, Namespace: le.Namespace, Identity: le.Identity,
			LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
			MeterProvider: meters,
		})
		return e, nil, err
	}
	if tel.sharded != nil {
		tel.sharded(settings.Shards)
	}
	incarnation, err := newIncarnation()
	if err != nil {
		return nil, nil, err
	}
	s, err := cl.shards(lease.ShardsConfig{
		Name: settings.Name, Namespace: le.Namespace, Identity: le.Identity, Incarnation: incarnation,
		Count: settings.Shards, LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		MeterProvider: meters,
	})
	return nil, s, err
}

// newIncarnation returns a random name for this process among those with
// its identity, so a replica restarted under its pod's name never takes
// its previous run's Leases for its own.
func newIncarnation() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("a random incarnation for the replica's Leases: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
