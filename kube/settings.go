package kube

import (
	"time"

	"github.com/loam-dev/loam/domain/settings"
)

// Settings configures a Controller: its name, namespace, workers, resync,
// retries' backoff and LeaderElection (each field is documented in
// domain/settings). They are plain values: every field's zero value means
// zero, never "use the default", so an Init starts from DefaultSettings
// and changes the fields it sources, running each field's Check function
// as it does. The package reads no environment variable.
type Settings = settings.Settings

// LeaderElection configures the Lease that elects which of a controller's
// replicas reconciles: its Namespace, this replica's Identity, and its
// LeaseDuration, RenewDeadline and RetryPeriod. The Lease is named
// Settings.Name.
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
