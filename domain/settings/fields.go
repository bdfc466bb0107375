package settings

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/loam-dev/loam/domain/shard"
)

// Bounds of the settings' fields that no Kubernetes rule sets.
const (
	// MaxWorkers bounds a controller's workers: past it, workers only
	// wait on the client's rate limit and the API server's.
	MaxWorkers = 1000
	// MinResync is client-go's shortest resync: an informer raises a
	// shorter one to it.
	MinResync = time.Second
	// MaxNamespaces bounds a namespace set: each namespace is watched on
	// its own, a watch per resource, and past this many one watch of
	// every namespace, narrowed by a selector, costs the API server less.
	MaxNamespaces = 100
)

// The checks below each tell whether one field's value is valid, and
// return an error that reads after the field's name, as kube's CheckX
// functions and NewController report them.

// CheckName reports whether name can name a controller: a valid Lease name,
// a DNS subdomain, and no longer than a field manager's 128 characters.
func CheckName(name string) error {
	if name == "" {
		return errors.New("is empty: want the controller's name, such as memcached-controller")
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a Lease's name: %s", name, strings.Join(msgs, "; "))
	}
	if len(name) > metav1validation.FieldManagerMaxLength {
		return fmt.Errorf("%q is %d characters long: a field manager's name has at most %d", name, len(name), metav1validation.FieldManagerMaxLength)
	}
	return nil
}

// CheckNamespace reports whether namespace is a namespace's name: a DNS
// label, never "".
func CheckNamespace(namespace string) error {
	if namespace == "" {
		return errors.New("is empty: want a namespace's name")
	}
	if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
		return fmt.Errorf("%q is not a namespace's name: %s", namespace, strings.Join(msgs, "; "))
	}
	return nil
}

// CheckWorkers reports whether workers is from 1 to MaxWorkers.
func CheckWorkers(workers int) error {
	if workers < 1 || workers > MaxWorkers {
		return fmt.Errorf("is %d: want from 1 to %d workers", workers, MaxWorkers)
	}
	return nil
}

// CheckResync reports whether resync is 0, for none, or at least
// MinResync.
func CheckResync(resync time.Duration) error {
	if resync != 0 && resync < MinResync {
		return fmt.Errorf("is %v: want 0, for no resync, or at least %v", resync, MinResync)
	}
	return nil
}

// CheckPositive reports whether d is longer than zero.
func CheckPositive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("is %v: want longer than 0s", d)
	}
	return nil
}

// CheckShards reports whether shards can be a controller's number of
// shards: a power of two from 1 to shard.MaxCount. 0, for no sharding, is
// checked by the caller.
func CheckShards(shards int) error { return shard.CheckCount(shards) }

// MaxShardedName is the longest Name a sharded controller may have: its
// Leases carry it as a label's value.
const MaxShardedName = validation.LabelValueMaxLength

// checkShardLeases returns the mistakes that keep a sharded controller's
// Leases from being named and labelled after name and identity.
func checkShardLeases(name, identity string, shards int) []error {
	var errs []error
	if len(name) > MaxShardedName {
		errs = append(errs, fmt.Errorf("kube: Settings.Name: %q is %d characters long: a sharded controller's Leases carry it as a label, which has at most %d", name, len(name), MaxShardedName))
	}
	member := name + "-member-" + identity
	if msgs := validation.IsDNS1123Subdomain(member); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("kube: Settings.LeaderElection.Identity: %q names the replica's membership Lease %q, which is not a Lease's name: %s", identity, member, strings.Join(msgs, "; ")))
	}
	last := fmt.Sprintf("%s-shard-%d", name, shards-1)
	if msgs := validation.IsDNS1123Subdomain(last); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("kube: Settings.Name: %q names the shard Lease %q, which is not a Lease's name: %s", name, last, strings.Join(msgs, "; ")))
	}
	return errs
}

// CheckIdentity reports whether identity can name a replica in a Lease: not
// empty, every character printable.
func CheckIdentity(identity string) error {
	if identity == "" {
		return errors.New("is empty: want this replica's own name, such as its pod's")
	}
	for i, r := range identity {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%q has the unprintable character %U at byte %d", identity, r, i)
		}
	}
	return nil
}

// CheckLeaseSeconds reports whether d can be a Lease's duration: at least
// a second, since a Lease counts it in whole seconds, and no more than an
// int32 of them.
func CheckLeaseSeconds(d time.Duration) error {
	if d < time.Second || d/time.Second > math.MaxInt32 {
		return fmt.Errorf("is %v: want from 1s to %d seconds, as a Lease holds it", d, math.MaxInt32)
	}
	return nil
}

// CheckNamespaces reports whether namespaces is a set of namespaces: from
// 1 to MaxNamespaces names, each a namespace's, none twice.
func CheckNamespaces(namespaces []string) error {
	if len(namespaces) == 0 || len(namespaces) > MaxNamespaces {
		return fmt.Errorf("has %d namespaces: want from 1 to %d", len(namespaces), MaxNamespaces)
	}
	var errs []error
	for i, ns := range namespaces {
		if err := CheckNamespace(ns); err != nil {
			errs = append(errs, fmt.Errorf("[%d] %w", i, err))
		} else if j := slices.Index(namespaces[:i], ns); j >= 0 {
			errs = append(errs, fmt.Errorf("[%d] %q is [%d] too: name each namespace once", i, ns, j))
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		return fmt.Errorf("%q: %s", namespaces, strings.Join(msgs, "; "))
	}
	return nil
}

// CheckLabelSelector reports whether selector parses as a label selector,
// as the API server parses one; "" selects everything.
func CheckLabelSelector(selector string) error {
	if _, err := labels.Parse(selector); err != nil {
		return fmt.Errorf("%q is not a label selector: %w", selector, err)
	}
	return nil
}

// CheckFieldSelector reports whether selector parses as a field selector;
// "" selects everything. Which fields a resource can be selected by is
// the API server's to say, and the first list tells.
func CheckFieldSelector(selector string) error {
	if _, err := fields.ParseSelector(selector); err != nil {
		return fmt.Errorf("%q is not a field selector: %w", selector, err)
	}
	return nil
}

// CheckRetryRate reports whether rate can refill the retries' bucket: more
// than zero retries a second, and finite.
func CheckRetryRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return fmt.Errorf("is %v: want more than 0 retries a second", rate)
	}
	return nil
}

// CheckRetryBurst reports whether burst can be the retries' bucket's size:
// at least 1.
func CheckRetryBurst(burst int) error {
	if burst < 1 {
		return fmt.Errorf("is %d: want at least 1 retry", burst)
	}
	return nil
}

// CheckFailureEvents reports whether f is FailureEventsOn or
// FailureEventsOff.
func CheckFailureEvents(f FailureEvents) error {
	if f != FailureEventsOn && f != FailureEventsOff {
		return fmt.Errorf("is %v: want FailureEventsOn or FailureEventsOff", f)
	}
	return nil
}
