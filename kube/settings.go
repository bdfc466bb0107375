package kube

import (
	"time"

	"github.com/loam-dev/loam/domain/settings"
)

// Settings configures a Controller. They are plain values: a field's zero
// value means zero, never "use the default", so an Init starts from
// DefaultSettings and changes the fields it sources, running each field's
// Check function as it does; NewController runs them all again, with the
// bounds between fields, and reports every mistake in one error. The
// package reads no environment variable: where a value comes from is the
// Init's to say.
//
// The fields, with their defaults (DefaultSettings) and units; a
// time.Duration is Go's, such as 30*time.Second:
//
//   - Name string: names the controller: its Lease (and with Shards its
//     shards' Leases, <Name>-shard-<i>), the field manager of its applies,
//     its work queue, and loam.kube.controller.name on its telemetry. No
//     default: required. CheckName: a DNS subdomain of at most 128
//     characters.
//   - Namespace string: reconciles one namespace's objects, and watches
//     the objects they own there; "" (the default) every namespace's.
//     CheckNamespace.
//   - Namespaces []string: reconciles the objects of a set of namespaces,
//     1 to 100, each watched on its own; nil (the default) leaves it to
//     Namespace. Setting both is a mistake. CheckNamespaces.
//   - LabelSelector, FieldSelector string: narrow what the controller
//     lists, watches, caches and reconciles to the objects that match,
//     such as "app.kubernetes.io/managed-by=memcached-operator"; an object
//     that stops matching leaves the cache as if deleted. "" (the default)
//     selects every object. CheckLabelSelector, CheckFieldSelector.
//   - Workers int: how many objects are reconciled at once (by each
//     replica, when sharded); never the same object twice at once.
//     Default 1; 1 to 1000. CheckWorkers.
//   - Shards int: splits the objects into that many shards, each
//     reconciled by the replica holding its Lease, instead of one leader
//     reconciling all. Default 0, no sharding; else a power of two up to
//     256, the same on every replica. CheckShards.
//   - Resync time.Duration: reconciles every object again that often,
//     changed or not. Default 10h; 0 never; else at least 1s.
//     CheckResync.
//   - RetryBaseDelay, RetryMaxDelay time.Duration: an object's backoff
//     after a failed reconcile, from RetryBaseDelay, doubling with each
//     failure, up to RetryMaxDelay. Defaults 5ms and 1000s, client-go's;
//     both above 0, RetryMaxDelay at least RetryBaseDelay.
//     CheckRetryBaseDelay, CheckRetryMaxDelay.
//   - RetryRate float64, RetryBurst int: the bucket every retry of any
//     object also waits on, in retries a second and retries at once; a
//     retry waits the longer of its backoff and the bucket. Defaults 10
//     and 100, client-go's. CheckRetryRate, CheckRetryBurst.
//   - ReconcileTimeout time.Duration: bounds each Reconcile and Finalize:
//     its context is cancelled that long after it started, and one that
//     returns later is a failure, retried with backoff. Default 5m; above
//     0. CheckReconcileTimeout.
//   - FailureEvents FailureEvents: whether a failed, timed-out or panicked
//     reconcile records a Warning Event on its object. Default (and zero)
//     FailureEventsOn. CheckFailureEvents.
//   - LeaderElection LeaderElection: the Lease the replicas campaign for;
//     see LeaderElection for its fields: Namespace and Identity (no
//     default: required), LeaseDuration 15s, RenewDeadline 10s,
//     RetryPeriod 2s, DrainTimeout 15s.
//
// Settings is domain/settings' type, re-exported, so that the runtime and
// this facade read one definition.
type Settings = settings.Settings

// LeaderElection configures the Lease that elects which of a controller's
// replicas reconciles, named Settings.Name. Its fields, with their
// defaults (DefaultSettings):
//
//   - Namespace string: the Lease's namespace, usually the controller's
//     own. No default: required. CheckNamespace.
//   - Identity string: this replica's name in the Lease, usually its
//     pod's. No default: required, unique among the replicas.
//     CheckIdentity.
//   - LeaseDuration time.Duration: how long a standby waits, from the last
//     renewal it saw, before it takes the Lease. Default 15s; whole
//     seconds, at least 1s, longer than RenewDeadline.
//     CheckLeaseDuration.
//   - RenewDeadline time.Duration: how long the leader keeps trying to
//     renew before it gives the Lease up. Default 10s; longer than 1.2
//     RetryPeriods, client-go's bound. CheckRenewDeadline.
//   - RetryPeriod time.Duration: how long a candidate waits between
//     tries, and the leader between renewals. Default 2s; above 0.
//     CheckRetryPeriod.
//   - DrainTimeout time.Duration: bounds a hand-off, the leader's at
//     SIGTERM or a shard's on a rebalance: the replica takes no more of
//     the Lease's objects and keeps renewing while the reconciles in
//     flight return, cancels those still running after DrainTimeout, and
//     releases the Lease once all have returned. Default 15s; at least
//     RetryPeriod. CheckDrainTimeout.
//
// LeaderElection is domain/settings' type, re-exported.
type LeaderElection = settings.LeaderElection

// FailureEvents says whether a Controller records a Warning Event on an
// object whose reconcile failed or timed out (reason ReconcileFailed, the
// error as its note) or panicked (ReconcilePanicked). Its zero value is
// FailureEventsOn, so they are recorded unless Settings.FailureEvents is
// FailureEventsOff.
type FailureEvents = settings.FailureEvents

const (
	// FailureEventsOn records the Events: the zero value.
	FailureEventsOn = settings.FailureEventsOn
	// FailureEventsOff records none; the failures are still logged, traced
	// and counted.
	FailureEventsOff = settings.FailureEventsOff
)

// ParseFailureEvents returns the FailureEvents s names, "on" or "off", as
// an Init's config parses an environment variable with it. It fails,
// naming s, on anything else.
func ParseFailureEvents(s string) (FailureEvents, error) { return settings.ParseFailureEvents(s) }

// CheckFailureEvents reports whether f is FailureEventsOn or
// FailureEventsOff. It returns nil when it is.
func CheckFailureEvents(f FailureEvents) error { return settings.CheckFailureEvents(f) }

// DefaultSettings returns Kubernetes' own defaults: one worker, a resync
// every 10 hours, client-go's per-object backoff from 5ms to 1000s under
// its bucket of 10 retries a second bursting to 100, a reconcile timeout
// of 5 minutes (see settings.DefaultReconcileTimeout for why), a Warning
// Event on every failed, timed-out or panicked reconcile, every
// namespace and every object, and kube-controller-manager's Lease of 15s, renewed within 10s, retried every
// 2s. Name, LeaderElection.Namespace and LeaderElection.Identity have no
// default, so the end user always sources them.
func DefaultSettings() Settings { return settings.Default() }

// CheckName reports whether name can name a controller: it is a valid
// Lease name, a DNS subdomain, and no longer than a field manager's 128
// characters. It returns nil when it can.
func CheckName(name string) error { return settings.CheckName(name) }

// CheckNamespace reports whether namespace is a namespace's name: a DNS
// label. "" is not: Settings.Namespace is "" for every namespace, and is
// checked only when set. It returns nil when it is.
func CheckNamespace(namespace string) error { return settings.CheckNamespace(namespace) }

// CheckNamespaces reports whether namespaces is a set of namespaces, as
// Settings.Namespaces holds one when set: from 1 to 100 names, each a DNS
// label, none twice. It returns nil when it is.
func CheckNamespaces(namespaces []string) error { return settings.CheckNamespaces(namespaces) }

// CheckLabelSelector reports whether selector parses as a label selector,
// such as "app.kubernetes.io/part-of=memcached,tier!=cache"; "" selects
// every object. It returns nil when it does.
func CheckLabelSelector(selector string) error { return settings.CheckLabelSelector(selector) }

// CheckFieldSelector reports whether selector parses as a field selector,
// such as "metadata.name!=default"; "" selects every object. Which fields
// a resource can be selected by is the API server's to say, so a field it
// doesn't support fails Serve's first list. It returns nil when it
// parses.
func CheckFieldSelector(selector string) error { return settings.CheckFieldSelector(selector) }

// CheckRetryRate reports whether rate can refill the bucket every retry
// waits on: more than zero retries a second, and finite. It returns nil
// when it can.
func CheckRetryRate(rate float64) error { return settings.CheckRetryRate(rate) }

// CheckRetryBurst reports whether burst can be that bucket's size: at
// least 1. It returns nil when it can.
func CheckRetryBurst(burst int) error { return settings.CheckRetryBurst(burst) }

// CheckReconcileTimeout reports whether d can bound a reconcile: longer
// than zero. It returns nil when it can.
func CheckReconcileTimeout(d time.Duration) error { return settings.CheckPositive(d) }

// CheckWorkers reports whether workers is a number of workers: from 1 to
// 1000. It returns nil when it is.
func CheckWorkers(workers int) error { return settings.CheckWorkers(workers) }

// CheckShards reports whether shards can be a controller's
// Settings.Shards when set: a power of two from 1 to 256. 0, the default,
// shards nothing and needs no check. It returns nil when it can.
func CheckShards(shards int) error { return settings.CheckShards(shards) }

// CheckResync reports whether resync is a resync period: 0, for none, or
// at least a second, client-go's shortest. It returns nil when it is.
func CheckResync(resync time.Duration) error { return settings.CheckResync(resync) }

// CheckRetryBaseDelay reports whether delay is a backoff's first delay:
// longer than zero. It returns nil when it is.
func CheckRetryBaseDelay(delay time.Duration) error { return settings.CheckPositive(delay) }

// CheckRetryMaxDelay reports whether delay can cap a backoff: longer than
// zero. That it is at least RetryBaseDelay takes both fields to tell, so
// NewController checks it. It returns nil when it is.
func CheckRetryMaxDelay(delay time.Duration) error { return settings.CheckPositive(delay) }

// CheckIdentity reports whether identity can name a replica in a Lease: it
// is not empty, and every character is printable. It returns nil when it
// can.
func CheckIdentity(identity string) error { return settings.CheckIdentity(identity) }

// CheckLeaseDuration reports whether d can be a Lease's duration: at least
// a second, since a Lease counts it in whole seconds, and no more than an
// int32 of them. It returns nil when it can.
func CheckLeaseDuration(d time.Duration) error { return settings.CheckLeaseSeconds(d) }

// CheckRenewDeadline reports whether d can be the leader's renew deadline:
// longer than zero. Its bounds against LeaseDuration and RetryPeriod take
// two fields to tell, so NewController checks them. It returns nil when it
// can.
func CheckRenewDeadline(d time.Duration) error { return settings.CheckPositive(d) }

// CheckRetryPeriod reports whether d can be a candidate's retry period:
// longer than zero. It returns nil when it can.
func CheckRetryPeriod(d time.Duration) error { return settings.CheckPositive(d) }

// CheckDrainTimeout reports whether d can bound a Lease's hand-off whose
// Lease is renewed every retryPeriod: at least a RetryPeriod, since a
// shorter drain cancels the reconciles in flight before the Lease's next
// renewal, as a lost Lease would. It returns nil when it can.
func CheckDrainTimeout(d, retryPeriod time.Duration) error {
	return settings.CheckDrainTimeout(d, retryPeriod)
}
