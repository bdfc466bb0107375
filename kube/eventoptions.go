package kube

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// ObjectRef names an object an Event is about, or related to, as an
// Event's regarding and related fields do: its API version, such as
// apps/v1 or v1, its kind, its namespace, "" for a cluster-scoped object,
// its name and its UID.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

// EventOption adds to an Event what RecordEvent and EventRecorder.Record
// don't ask for: Related and Action make one.
type EventOption struct {
	related *ObjectRef
	action  string
}

// Related names a second object the Event concerns, such as the
// Deployment a Memcached's reconcile failed to scale: `kubectl describe`
// shows it, and repeats count in one series only when they name the same
// one. Its APIVersion, Kind, Name and UID must be set.
func Related(obj ObjectRef) EventOption { return EventOption{related: &obj} }

// Action names what the controller was doing, such as Scale: CamelCase,
// from 1 to 128 ASCII letters and digits, the first an upper-case letter.
// Inside a reconcile it replaces Reconcile or Finalize; repeats count in
// one series only when their actions are the same.
func Action(action string) EventOption { return EventOption{action: action} }

// applyEventOptions returns r with opts applied, the last of each kind
// winning, and every mistake in them, each after "the ".
func applyEventOptions(r ports.EventRecord, opts []EventOption) (ports.EventRecord, []error) {
	var errs []error
	for i, o := range opts {
		switch {
		case o.related != nil:
			if err := checkObjectRef(*o.related); err != nil {
				errs = append(errs, fmt.Errorf("related object (option %d) %w", i, err))
				continue
			}
			rel := ports.EventObject(*o.related)
			r.Related = &rel
		case o.action != "":
			if err := checkCamelCase(o.action, "action", "Scale"); err != nil {
				errs = append(errs, fmt.Errorf("action (option %d) %w", i, err))
				continue
			}
			r.Action = o.action
		default:
			errs = append(errs, fmt.Errorf("option %d is the zero EventOption: make one with kube.Related or kube.Action", i))
		}
	}
	return r, errs
}

// checkObjectRef reports whether ref names an object: its APIVersion
// parses, its Kind, Name and UID are set, and its Namespace, when set, is
// a namespace's name. Its error reads after "the related object".
func checkObjectRef(ref ObjectRef) error {
	var errs []error
	if ref.APIVersion == "" {
		errs = append(errs, errors.New("has no APIVersion, such as apps/v1"))
	} else if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		errs = append(errs, fmt.Errorf("has the APIVersion %q: %w", ref.APIVersion, err))
	}
	if ref.Kind == "" {
		errs = append(errs, errors.New("has no Kind, such as Deployment"))
	}
	if ref.Name == "" {
		errs = append(errs, errors.New("has no Name"))
	}
	if ref.UID == "" {
		errs = append(errs, errors.New("has no UID"))
	}
	if ref.Namespace != "" {
		if err := CheckNamespace(ref.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("has the Namespace %q: %w", ref.Namespace, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s/%s %s/%s: %w", ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, errors.Join(errs...))
}

// checkEventReason reports whether reason is an Event's reason: from 1
// to MaxEventReason ASCII letters and digits, the first an upper-case
// letter. Its error reads after "the reason".
func checkEventReason(reason string) error {
	return checkCamelCase(reason, "reason", "ConfigMapMissing")
}

// checkCamelCase reports whether s is an Event's field, what, its reason
// or its action: from 1 to MaxEventReason ASCII letters and digits, the
// first an upper-case letter. Its error reads after "the reason" or "the
// action", and names example.
func checkCamelCase(s, what, example string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty: want CamelCase, such as %s", example)
	case len(s) > MaxEventReason:
		return fmt.Errorf("%.32q… is %d characters long: an Event's %s has at most %d", s, len(s), what, MaxEventReason)
	case s[0] < 'A' || s[0] > 'Z':
		return fmt.Errorf("%q does not start with an upper-case ASCII letter: want CamelCase, such as %s", s, example)
	}
	for i := range len(s) {
		if c := s[i]; !isASCIIAlphanumeric(c) {
			return fmt.Errorf("%q has %q at byte %d: want only ASCII letters and digits, CamelCase", s, c, i)
		}
	}
	return nil
}

// isASCIIAlphanumeric reports whether c is an ASCII letter or digit.
func isASCIIAlphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
