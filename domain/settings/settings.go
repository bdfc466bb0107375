// Package settings is a controller's Settings: their defaults, each
// field's own check (fields.go), the bounds between fields that take two
// of them to tell (bounds.go), Validate, which reports every mistake at
// once, and the Lease fence. kube re-exports Settings and the checks.
package settings

import (
	"errors"
	"fmt"
	"time"
)

// The defaults of a controller's settings: Kubernetes' own. Default
// and backoff.Default read them here, so each has one home.
const (
	// DefaultWorkers is one worker, as kube-controller-manager's
	// controllers mostly have.
	DefaultWorkers = 1
	// DefaultResync is controller-runtime's and kube-controller-manager's
	// 10 hours.
	DefaultResync = 10 * time.Hour
	// DefaultRetryBaseDelay and DefaultRetryMaxDelay are client-go's
	// DefaultTypedControllerRateLimiter's per-key backoff.
	DefaultRetryBaseDelay = 5 * time.Millisecond
	DefaultRetryMaxDelay  = 1000 * time.Second
	// DefaultRetryRate and DefaultRetryBurst are the same limiter's bucket
	// over every key: 10 retries a second, bursting to 100.
	DefaultRetryRate  = 10
	DefaultRetryBurst = 100
	// DefaultReconcileTimeout bounds one reconcile, and one Finalize: five
	// minutes. Every request a reconcile makes to the API server ends
	// within the server's own 60-second request timeout, so a reconcile
	// still running after five of them waits on something else — an
	// outside system that hung, a lock never released — and holds a
	// worker the other objects need. It is long enough that no reconcile
	// that makes progress meets it; one that must wait longer polls with
	// Result.After instead.
	DefaultReconcileTimeout = 5 * time.Minute
	// DefaultLeaseDuration, DefaultRenewDeadline and DefaultRetryPeriod
	// are kube-controller-manager's Lease: 15s, renewed within 10s,
	// retried every 2s.
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Settings configures a Controller. They are plain values: every field's
// zero value means zero, never "use the default", so an Init starts from
// Default and changes the fields it sources, running each field's check
// as it does. kube re-exports them as kube.Settings.
type Settings struct {
	// Name names the controller: its Lease, the field manager of its
	// applies, its work queue, and the loam.kube.controller.name of its
	// metrics. It has no default.
	Name string
	// Namespace limits the controller to the objects of one namespace, and
	// of the resources they own; "" reconciles every namespace's.
	Namespace string
	// Namespaces limits the controller to the objects of a set of
	// namespaces, and of the resources they own, each watched on its own;
	// nil, or empty, leaves it to Namespace. Setting both is a mistake.
	Namespaces []string
	// LabelSelector and FieldSelector narrow the objects the controller
	// lists, watches, caches and reconciles to those that match, such as
	// "app.kubernetes.io/managed-by=memcached-operator" or
	// "metadata.name!=kube-system"; "" selects every object. An object
	// that stops matching leaves the cache as if it were deleted.
	LabelSelector, FieldSelector string
	// Workers is how many objects are reconciled at once: by each
	// replica, when the controller is sharded.
	Workers int
	// Shards, when not 0, splits the controller's objects into that many
	// shards, a power of two, each reconciled by the replica that holds
	// its Lease, <Name>-shard-<i>: every replica reconciles its share,
	// instead of one leader reconciling every object. Each replica
	// announces itself in a Lease of its own, <Name>-member-<Identity>,
	// and every Lease is timed by LeaderElection. 0, the default, shards
	// nothing. Every replica must run with the same number.
	Shards int
	// Resync reconciles every object again that often, whether or not it
	// changed; 0 never does.
	Resync time.Duration
	// RetryBaseDelay is an object's backoff after its first failed
	// reconcile. It doubles with each failure after that.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps an object's backoff.
	RetryMaxDelay time.Duration
	// RetryRate and RetryBurst are the bucket every retry also waits on,
	// whichever object it is: RetryRate retries a second, bursting to
	// RetryBurst at once. A retry waits the longer of its object's backoff
	// and the bucket's delay.
	RetryRate  float64
	RetryBurst int
	// ReconcileTimeout bounds each reconcile, and each Finalize: its
	// context is cancelled that long after it started, and a reconcile
	// that returns after that is a failure, retried with backoff.
	ReconcileTimeout time.Duration
	// FailureEvents says whether the controller records a Warning Event on
	// an object whose reconcile failed, timed out or panicked. Its zero
	// value, FailureEventsOn, records them.
	FailureEvents FailureEvents
	// LeaderElection configures the Lease the controller's replicas
	// campaign for.
	LeaderElection LeaderElection
}

// FailureEvents says whether a controller records a Warning Event on an
// object whose reconcile failed, timed out or panicked: ReconcileFailed,
// with the error as its note, or ReconcilePanicked. Its zero value is
// FailureEventsOn, so a Settings that never names it records them.
type FailureEvents int

const (
	// FailureEventsOn records the Events: the zero value.
	FailureEventsOn FailureEvents = iota
	// FailureEventsOff records none: the failures are still logged,
	// traced and counted.
	FailureEventsOff
)

// String returns "on" or "off", as ParseFailureEvents reads them.
func (f FailureEvents) String() string {
	switch f {
	case FailureEventsOn:
		return "on"
	case FailureEventsOff:
		return "off"
	}
	return fmt.Sprintf("FailureEvents(%d)", int(f))
}

// ParseFailureEvents returns the FailureEvents s names: "on" or "off". It
// fails, naming s, on anything else.
func ParseFailureEvents(s string) (FailureEvents, error) {
	switch s {
	case "on":
		return FailureEventsOn, nil
	case "off":
		return FailureEventsOff, nil
	}
	return 0, fmt.Errorf("%q is neither on nor off", s)
}

// LeaderElection configures the Lease that elects which of a controller's
// replicas reconciles. The Lease is named Settings.Name.
type LeaderElection struct {
	// Namespace is the Lease's namespace, usually the controller's own. It
	// has no default.
	Namespace string
	// Identity is this replica's name in the Lease, usually its pod's. It
	// has no default.
	Identity string
	// LeaseDuration is how long a standby waits, from the last renewal it
	// saw, before it takes the Lease.
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader keeps trying to renew the Lease
	// before it gives the Lease up.
	RenewDeadline time.Duration
	// RetryPeriod is how long a candidate waits between tries.
	RetryPeriod time.Duration
	// DrainTimeout bounds a Lease's hand-off, the leader's at SIGTERM and
	// a shard's on a rebalance: the replica stops taking the Lease's
	// objects and keeps renewing the Lease while the reconciles in flight
	// return, cancels those still running DrainTimeout after the hand-off
	// began, and releases the Lease once they have all returned. It is at
	// least RetryPeriod.
	DrainTimeout time.Duration
}

// Default returns the Default constants as Settings. Name,
// LeaderElection.Namespace and LeaderElection.Identity have no default.
func Default() Settings {
	return Settings{
		Workers:          DefaultWorkers,
		Resync:           DefaultResync,
		RetryBaseDelay:   DefaultRetryBaseDelay,
		RetryMaxDelay:    DefaultRetryMaxDelay,
		RetryRate:        DefaultRetryRate,
		RetryBurst:       DefaultRetryBurst,
		ReconcileTimeout: DefaultReconcileTimeout,
		FailureEvents:    FailureEventsOn,
		LeaderElection: LeaderElection{
			LeaseDuration: DefaultLeaseDuration,
			RenewDeadline: DefaultRenewDeadline,
			RetryPeriod:   DefaultRetryPeriod,
			DrainTimeout:  DefaultDrainTimeout,
		},
	}
}

// Validate reports every mistake in s in one error, a line each, naming
// its field as "kube: Settings.<field>: ": each field's own check, then the
// bounds between fields, each checked only when its fields pass
// their own, so no mistake is reported twice.
func Validate(s Settings) error {
	var errs []error
	check := func(field string, err error) bool {
		if err != nil {
			errs = append(errs, fmt.Errorf("kube: Settings.%s: %w", field, err))
		}
		return err == nil
	}
	le := s.LeaderElection
	nameOK := check("Name", CheckName(s.Name))
	if s.Namespace != "" {
		check("Namespace", CheckNamespace(s.Namespace))
	}
	if len(s.Namespaces) > 0 {
		if check("Namespaces", CheckNamespaces(s.Namespaces)) && s.Namespace != "" {
			check("Namespaces", fmt.Errorf("is %q, and Namespace is %q: set one of them", s.Namespaces, s.Namespace))
		}
	}
	check("LabelSelector", CheckLabelSelector(s.LabelSelector))
	check("FieldSelector", CheckFieldSelector(s.FieldSelector))
	check("Workers", CheckWorkers(s.Workers))
	shardsOK := s.Shards == 0 || check("Shards", CheckShards(s.Shards))
	check("Resync", CheckResync(s.Resync))
	baseOK := check("RetryBaseDelay", CheckPositive(s.RetryBaseDelay))
	maxOK := check("RetryMaxDelay", CheckPositive(s.RetryMaxDelay))
	check("RetryRate", CheckRetryRate(s.RetryRate))
	check("RetryBurst", CheckRetryBurst(s.RetryBurst))
	check("ReconcileTimeout", CheckPositive(s.ReconcileTimeout))
	check("FailureEvents", CheckFailureEvents(s.FailureEvents))
	check("LeaderElection.Namespace", CheckNamespace(le.Namespace))
	identityOK := check("LeaderElection.Identity", CheckIdentity(le.Identity))
	leaseOK := check("LeaderElection.LeaseDuration", CheckLeaseSeconds(le.LeaseDuration))
	renewOK := check("LeaderElection.RenewDeadline", CheckPositive(le.RenewDeadline))
	retryOK := check("LeaderElection.RetryPeriod", CheckPositive(le.RetryPeriod))

	if baseOK && maxOK {
		check("RetryMaxDelay", CheckRetryMaxDelay(s.RetryMaxDelay, s.RetryBaseDelay))
	}
	if leaseOK && renewOK {
		check("LeaderElection.LeaseDuration", CheckLeaseDuration(le.LeaseDuration, le.RenewDeadline))
	}
	if renewOK && retryOK {
		check("LeaderElection.RenewDeadline", CheckRenewDeadline(le.RenewDeadline, le.RetryPeriod))
	}
	if retryOK {
		check("LeaderElection.DrainTimeout", CheckDrainTimeout(le.DrainTimeout, le.RetryPeriod))
	}
	if s.Shards != 0 && shardsOK && nameOK && identityOK {
		errs = append(errs, checkShardLeases(s.Name, le.Identity, s.Shards)...)
	}
	return errors.Join(errs...)
}
