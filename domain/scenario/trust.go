// Package scenario holds the rules for carrying a failure scenario on a
// Kubernetes object: whether a reconcile takes the scenario its object's
// annotation holds (Decide, Join), whether a child's scenario is what its
// controller owner says (Owners, OwnerSays: TrustOwnerScenario's rule),
// and how the apply of one of the object's children carries it on
// (AnnotateChild). It decides only: the
// caller parses baggage with the App's Decoder, asks the end user's trust,
// and sends the body.
package scenario

import (
	"strconv"

	"go.opentelemetry.io/otel/baggage"
)

// Verdict is how a reconcile reads its object's scenario annotation: one
// of the four ways TrustScenario documents.
type Verdict int

const (
	// Absent is an object without the annotation, or whose annotation holds
	// none of the Decoder's members: the reconcile carries no scenario, and
	// nothing is recorded.
	Absent Verdict = iota
	// Unreadable is an annotation that isn't W3C baggage, whose scenario the
	// Decoder can't read, or whose object trust can't be asked about: the
	// reconcile carries no scenario, and the strip is recorded with the
	// Outcome's Err.
	Unreadable
	// Untrusted is a scenario on an object trust doesn't trust: the
	// reconcile carries no scenario, and the strip is recorded with no
	// error.
	Untrusted
	// Trusted is a scenario on an object trust trusts: the Outcome's
	// Scenario joins the reconcile's context.
	Trusted
)

// String names v as its constant is named, for test failures and logs.
func (v Verdict) String() string {
	switch v {
	case Absent:
		return "Absent"
	case Unreadable:
		return "Unreadable"
	case Untrusted:
		return "Untrusted"
	case Trusted:
		return "Trusted"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Outcome is what Decide found in an annotation.
type Outcome struct {
	// Verdict is which of the four ways the annotation was read.
	Verdict Verdict
	// Err says why an Unreadable annotation couldn't be read; it is nil for
	// every other Verdict.
	Err error
	// Scenario is the Decoder's members the annotation holds, for a
	// Trusted one; it is empty (Len 0) for every other Verdict.
	Scenario baggage.Baggage
}

// Decide reads value, a scenario annotation's value ("" for an object
// without the annotation), the way TrustScenario documents.
//
// parse reads a value as W3C baggage and returns only the Decoder's
// members in it — empty baggage when there are none — or an error when the
// value isn't baggage or the Decoder can't read its scenario. trust
// reports whether the object is trusted, or an error when the object can't
// be handed to the end user's trust. Decide calls parse only for a
// non-empty value and trust only when the value carries a scenario, so an
// object without one never reaches the end user's code. A panic in either
// is left to the caller.
//
// Decide never fails: an error of parse or trust is an Unreadable
// Outcome's Err, returned as it is.
func Decide(value string, parse func(string) (baggage.Baggage, error), trust func() (bool, error)) Outcome {
	if value == "" {
		// "" is W3C baggage without members: no need to parse it.
		return Outcome{Verdict: Absent}
	}
	scenario, err := parse(value)
	if err != nil {
		return Outcome{Verdict: Unreadable, Err: err}
	}
	if scenario.Len() == 0 {
		return Outcome{Verdict: Absent}
	}
	trusted, err := trust()
	switch {
	case err != nil:
		return Outcome{Verdict: Unreadable, Err: err}
	case !trusted:
		return Outcome{Verdict: Untrusted}
	}
	return Outcome{Verdict: Trusted, Scenario: scenario}
}

// Join returns b with every member of scenario set in it, replacing a
// member of b with the same key and keeping every other member of b: the
// baggage of a reconcile that carries scenario. A member that can't be
// set, because it isn't valid, is left out: members parsed from baggage
// always are.
func Join(b, scenario baggage.Baggage) baggage.Baggage {
	for _, m := range scenario.Members() {
		if set, err := b.SetMember(m); err == nil {
			b = set
		}
	}
	return b
}
