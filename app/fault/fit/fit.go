// Package fit describes failure-injection scenarios: which injection points
// fail, and how. A Scenario is a list of Rules; each Rule names a point,
// exactly or by a prefix, and the Fault that a point it matches meets.
//
// A scenario travels in a context's W3C baggage, written by an Encoder and
// read back by a Decoder, so it crosses process boundaries with the request
// it belongs to. Package jsonscenario is a codec that is both. The App's
// injector, package fault, evaluates points against the scenario a context
// carries and carries out the Fault it finds.
//
// # Matching
//
// A Rule's Point matches a point that is equal to it, or, when it ends in
// '*', every point that starts with what comes before the '*'. A Point of
// "*" alone matches every point. Rules are tried in order and the first rule
// that matches decides: a later rule never overrides an earlier one, so put
// the narrowest rules first. A rule with the zero Fault is useful for just
// that reason: it exempts the points it matches from the broader rules after
// it.
//
// Point names run from the broadest part to the narrowest, so that a prefix
// selects a family of points: kube:<resource>[.<group>][/<subresource>]:<verb>
// for the Kubernetes Client's requests, such as kube:deployments.apps:patch,
// and kube:deployments.apps:* for every request about Deployments.
package fit

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Scenario is a failure-injection experiment: the rules that decide which
// points fail, and how. The zero Scenario has no rules, and fails nothing.
type Scenario struct {
	// Rules are tried in order; the first that matches a point decides its
	// Fault.
	Rules []Rule

	// Ends, when not zero, is when the experiment ends: from then on, the
	// scenario fails nothing, wherever it was carried, as if no context
	// carried it. The zero time never ends it.
	//
	// Ends is a loam extension; package fault says how an expired
	// scenario is recorded.
	Ends time.Time

	// ID, when not "", identifies the experiment, so that everything it
	// caused can be found: package fault puts it on every event and record
	// of the scenario and in every error it injects. At most 128
	// characters, each printable ASCII.
	//
	// ID is a loam extension.
	ID string
}

// MaxIDLength is the most characters a Scenario's ID has.
const MaxIDLength = 128

// Expired reports whether s has an end and now is at or past it.
func (s Scenario) Expired(now time.Time) bool {
	return !s.Ends.IsZero() && !now.Before(s.Ends)
}

// Rule is one line of a Scenario: the points it matches, and the Fault they
// meet.
type Rule struct {
	// Point names the injection points the rule matches: one point exactly,
	// or, ending in '*', every point that begins with the text before the
	// '*'. "*" alone matches every point. It must not be empty, and '*' may
	// appear only at its end.
	Point string

	// Fault is what a point the rule matches meets. The zero Fault injects
	// nothing.
	Fault Fault

	// Count, when above zero, limits the rule to the first Count faults it
	// injects for one scenario: after that the rule no longer matches, and
	// the rules after it decide. Zero means no limit.
	//
	// Count is a loam extension; package fault documents how evaluations
	// are counted.
	Count int
}

// Fault is what an injection point meets. A delay may come with an abort
// or a status: the delay is waited first, and then the abort fails the
// call, or the status answers it. The zero Fault injects nothing.
type Fault struct {
	// Abort fails the call at the point, as an unreachable dependency
	// would, with nothing sent.
	Abort bool

	// Status, when not zero, answers the call at the point in place of its
	// dependency, with nothing sent: an HTTP error status, from 400 to
	// 599, such as 409, 429, 500 or 503. The layer that carries out the
	// fault answers as its dependency would; the Kubernetes Client's
	// transport answers with the API server's own response, a
	// metav1.Status body and all, so client-go handles it as it handles a
	// real one. A caller that can't answer for its dependency fails the
	// call, as with an abort, with an error naming the status. Status and
	// Abort are exclusive.
	//
	// Status is a loam extension.
	Status int

	// RetryAfter, when above zero, is the Retry-After the Status's answer
	// carries, in whole seconds: client-go retries a 429 or a 5xx answer
	// that has one, after waiting that long. Zero sends none. It needs a
	// Status.
	//
	// RetryAfter is a loam extension.
	RetryAfter time.Duration

	// Delay is waited before the call goes ahead, inside the call's
	// context. It is never negative.
	Delay time.Duration

	// Percent is the chance, from 0 to 100, that an evaluation the rule
	// matches meets this Fault; the others meet the zero Fault. 0, the zero
	// value, and 100 both mean every time.
	//
	// Percent is a loam extension.
	Percent float64
}

// IsZero reports whether f injects nothing: no abort, no status and no
// delay. Percent or RetryAfter alone injects nothing.
func (f Fault) IsZero() bool {
	return !f.Abort && f.Status == 0 && f.Delay == 0
}

// Fails reports whether f fails the call it meets, once its delay is
// over: an abort or a status.
func (f Fault) Fails() bool {
	return f.Abort || f.Status != 0
}

// Met returns f as a point meets it, once Percent has had its say: f
// with Percent 0.
func (f Fault) Met() Fault {
	f.Percent = 0
	return f
}

// Always reports whether f's Percent means every time: 0 or 100.
func (f Fault) Always() bool {
	return f.Percent == 0 || f.Percent == 100
}

// Matches reports whether r's Point matches point: exactly, or by the
// prefix before a trailing '*'.
func (r Rule) Matches(point string) bool {
	if prefix, ok := strings.CutSuffix(r.Point, "*"); ok {
		return strings.HasPrefix(point, prefix)
	}
	return r.Point == point
}

// Match returns the index of the first of s's rules that matches point, and
// whether any does. It ignores Count and Percent, which need the state of
// an evaluation that package fault keeps.
func (s Scenario) Match(point string) (int, bool) {
	for i, r := range s.Rules {
		if r.Matches(point) {
			return i, true
		}
	}
	return -1, false
}

// Validate reports every mistake in s together, each rule's naming the
// rule by index and point: an empty Point, a '*' anywhere but at a Point's
// end, a negative Delay, a Percent outside 0 to 100, a Status outside 400
// to 599 or with Abort, a RetryAfter that is negative, not whole seconds or
// without a Status, and a negative Count;
// an Ends outside the years 1 to 9999, which RFC 3339 can't write; and an
// ID longer than MaxIDLength or not printable ASCII.
func (s Scenario) Validate() error {
	var errs []error
	if y := s.Ends.Year(); !s.Ends.IsZero() && (y < 1 || y > 9999) {
		errs = append(errs, fmt.Errorf("fit: ends %s is outside the years 1 to 9999", s.Ends))
	}
	if err := checkID(s.ID); err != nil {
		errs = append(errs, fmt.Errorf("fit: id %q: %w", s.ID, err))
	}
	for i, r := range s.Rules {
		for _, err := range r.mistakes() {
			errs = append(errs, fmt.Errorf("fit: rule %d (point %q): %w", i, r.Point, err))
		}
	}
	return errors.Join(errs...)
}

// checkID reports what is wrong with id as a Scenario's ID.
func checkID(id string) error {
	if len(id) > MaxIDLength {
		return fmt.Errorf("%d characters, more than %d", len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("byte %#x at %d is not printable ASCII", c, i)
		}
	}
	return nil
}

// mistakes returns every mistake in r, one error each.
func (r Rule) mistakes() []error {
	var errs []error
	switch star := strings.IndexByte(r.Point, '*'); {
	case r.Point == "":
		errs = append(errs, errors.New("point is empty"))
	case star >= 0 && star != len(r.Point)-1:
		errs = append(errs, errors.New("'*' may appear only at the end of a point"))
	}
	if r.Fault.Delay < 0 {
		errs = append(errs, fmt.Errorf("delay %s is negative", r.Fault.Delay))
	}
	if p := r.Fault.Percent; math.IsNaN(p) || p < 0 || p > 100 {
		errs = append(errs, fmt.Errorf("percent %v is not between 0 and 100", p))
	}
	if st := r.Fault.Status; st != 0 && (st < 400 || st > 599) {
		errs = append(errs, fmt.Errorf("status %d is not an HTTP error status, from 400 to 599", st))
	}
	if r.Fault.Status != 0 && r.Fault.Abort {
		errs = append(errs, fmt.Errorf("status %d and abort are exclusive: a call fails one way", r.Fault.Status))
	}
	switch ra := r.Fault.RetryAfter; {
	case ra < 0:
		errs = append(errs, fmt.Errorf("retry-after %s is negative", ra))
	case ra%time.Second != 0:
		errs = append(errs, fmt.Errorf("retry-after %s is not whole seconds, as a Retry-After header writes it", ra))
	case ra > 0 && r.Fault.Status == 0:
		errs = append(errs, fmt.Errorf("retry-after %s has no status to answer with", ra))
	}
	if r.Count < 0 {
		errs = append(errs, fmt.Errorf("count %d is negative", r.Count))
	}
	return errs
}
