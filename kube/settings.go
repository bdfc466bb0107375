package kube

import (
	"errors"
	"fmt"
	"time"

	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/domain/settings"
)

// Settings configures a Controller. They are plain values: every field's
// zero value means zero, never "use the default", so an Init starts from
// DefaultSettings and changes the fields it sources, running each field's
// Check function as it does. The package reads no environment variable.
type Settings struct {
	// Name names the controller: its Lease, the field manager of its
	// applies, its work queue, and the loam.kube.controller.name of its
	// metrics. It has no default.
	Name string
	// Namespace limits the controller to the objects of one namespace, and
	// of the resources they own; "" reconciles every namespace's.
	Namespace string
	// Workers is how many objects are reconciled at once.
	Workers int
	// Resync reconciles every object again that often, whether or not it
	// changed; 0 never does.
	Resync time.Duration
	// RetryBaseDelay is an object's backoff after its first failed
	// reconcile. It doubles with each failure after that.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps an object's backoff.
	RetryMaxDelay time.Duration
	// LeaderElection configures the Lease the controller's replicas
	// campaign for.
	LeaderElection LeaderElection
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
}

// DefaultSettings returns Kubernetes' own defaults: one worker, a resync
// every 10 hours, client-go's per-object backoff from 5ms to 1000s, and
// kube-controller-manager's Lease of 15s, renewed within 10s, retried every
// 2s. Name, LeaderElection.Namespace and LeaderElection.Identity have no
// default, so the end user always sources them.
func DefaultSettings() Settings {
	return Settings{
		Workers:        settings.DefaultWorkers,
		Resync:         settings.DefaultResync,
		RetryBaseDelay: settings.DefaultRetryBaseDelay,
		RetryMaxDelay:  settings.DefaultRetryMaxDelay,
		LeaderElection: LeaderElection{
			LeaseDuration: settings.DefaultLeaseDuration,
			RenewDeadline: settings.DefaultRenewDeadline,
			RetryPeriod:   settings.DefaultRetryPeriod,
		},
	}
}

// retry is the backoff of s's retries, under client-go's overall limit of
// 10 retries a second, bursting to 100.
func (s Settings) retry() backoff.Policy {
	p := backoff.Default()
	p.BaseDelay, p.MaxDelay = s.RetryBaseDelay, s.RetryMaxDelay
	return p
}

// CheckName reports whether name can name a controller: it is a valid
// Lease name, a DNS subdomain, and no longer than a field manager's 128
// characters. It returns nil when it can.
func CheckName(name string) error { return settings.CheckName(name) }

// CheckNamespace reports whether namespace is a namespace's name: a DNS
// label. "" is not: Settings.Namespace is "" for every namespace, and is
// checked only when set. It returns nil when it is.
func CheckNamespace(namespace string) error { return settings.CheckNamespace(namespace) }

// CheckWorkers reports whether workers is a number of workers: from 1 to
// 1000. It returns nil when it is.
func CheckWorkers(workers int) error { return settings.CheckWorkers(workers) }

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

// validate reports every mistake in s, each naming its field: each field's
// own check, then the three bounds between fields, each checked only when
// its fields pass their own.
func (s Settings) validate() error {
	var errs []error
	check := func(field string, err error) bool {
		if err != nil {
			errs = append(errs, fmt.Errorf("kube: Settings.%s: %w", field, err))
		}
		return err == nil
	}
	le := s.LeaderElection
	check("Name", CheckName(s.Name))
	if s.Namespace != "" {
		check("Namespace", CheckNamespace(s.Namespace))
	}
	check("Workers", CheckWorkers(s.Workers))
	check("Resync", CheckResync(s.Resync))
	baseOK := check("RetryBaseDelay", CheckRetryBaseDelay(s.RetryBaseDelay))
	maxOK := check("RetryMaxDelay", CheckRetryMaxDelay(s.RetryMaxDelay))
	check("LeaderElection.Namespace", CheckNamespace(le.Namespace))
	check("LeaderElection.Identity", CheckIdentity(le.Identity))
	leaseOK := check("LeaderElection.LeaseDuration", CheckLeaseDuration(le.LeaseDuration))
	renewOK := check("LeaderElection.RenewDeadline", CheckRenewDeadline(le.RenewDeadline))
	retryOK := check("LeaderElection.RetryPeriod", CheckRetryPeriod(le.RetryPeriod))

	if baseOK && maxOK {
		check("RetryMaxDelay", settings.CheckRetryMaxDelay(s.RetryMaxDelay, s.RetryBaseDelay))
	}
	if leaseOK && renewOK {
		check("LeaderElection.LeaseDuration", settings.CheckLeaseDuration(le.LeaseDuration, le.RenewDeadline))
	}
	if renewOK && retryOK {
		check("LeaderElection.RenewDeadline", settings.CheckRenewDeadline(le.RenewDeadline, le.RetryPeriod))
	}
	return errors.Join(errs...)
}
