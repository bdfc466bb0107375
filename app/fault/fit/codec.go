package fit

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/baggage"
)

// maxBaggageBytes is the most a W3C baggage header may hold; propagators
// drop baggage longer than this.
const maxBaggageBytes = 8192

// Encoder writes a Scenario as baggage members, so that it can travel in a
// context's W3C baggage, an HTTP request's baggage header, or a Kubernetes
// object's annotation.
type Encoder interface {
	// Encode returns the members that carry s. It returns an error for a
	// Scenario it can't write, such as one that fails Validate.
	Encode(s Scenario) ([]baggage.Member, error)
}

// Decoder reads a Scenario back from baggage. It owns the members it reads:
// those are what a context must carry to carry a scenario, and what
// stripping a scenario removes.
type Decoder interface {
	// Members returns the names of the baggage members the Decoder reads,
	// the same every time.
	Members() []string

	// Decode returns the Scenario that b's members carry. When b holds
	// none of the Decoder's members, it returns the zero Scenario and no
	// error. A member it can't read is an error, a *DecodeError naming the
	// member, never a panic.
	Decode(b baggage.Baggage) (Scenario, error)
}

// DecodeError reports baggage that carries no scenario a Decoder can read:
// a member whose value doesn't decode, or, with Member empty, a value that
// isn't W3C baggage at all.
type DecodeError struct {
	// Member is the baggage member that couldn't be read, or empty when
	// the baggage itself couldn't be.
	Member string
	// Err says what is wrong with it.
	Err error
}

// Error names the member and what is wrong with it.
func (e *DecodeError) Error() string {
	if e.Member == "" {
		return fmt.Sprintf("fit: baggage: %v", e.Err)
	}
	return fmt.Sprintf("fit: baggage member %q: %v", e.Member, e.Err)
}

// Unwrap returns what is wrong.
func (e *DecodeError) Unwrap() error { return e.Err }

// ContextWithScenario returns a copy of ctx whose W3C baggage carries s, as
// enc writes it. Every other member of ctx's baggage is kept; members enc
// writes replace those of the same names. It returns an error, and ctx
// unchanged, when enc is nil, when s fails Validate, when enc can't write
// s, or when the baggage would be longer than the 8192 bytes W3C Baggage
// allows a header.
func ContextWithScenario(ctx context.Context, enc Encoder, s Scenario) (context.Context, error) {
	if enc == nil {
		return ctx, errors.New("fit: no Encoder to write the scenario with")
	}
	if err := s.Validate(); err != nil {
		return ctx, err
	}
	members, err := enc.Encode(s)
	if err != nil {
		return ctx, fmt.Errorf("fit: encoding the scenario: %w", err)
	}
	b := baggage.FromContext(ctx)
	for _, m := range members {
		if b, err = b.SetMember(m); err != nil {
			return ctx, fmt.Errorf("fit: adding member %q to the baggage: %w", m.Key(), err)
		}
	}
	if n := len(b.String()); n > maxBaggageBytes {
		return ctx, fmt.Errorf("fit: the baggage with the scenario is %d bytes, more than the %d W3C Baggage allows", n, maxBaggageBytes)
	}
	return baggage.ContextWithBaggage(ctx, b), nil
}

// FromContext returns the Scenario that ctx's baggage carries, as dec reads
// it, and whether ctx carries one: whether its baggage holds any of dec's
// members. A scenario that doesn't decode is an error.
func FromContext(ctx context.Context, dec Decoder) (Scenario, bool, error) {
	if dec == nil {
		return Scenario{}, false, errors.New("fit: no Decoder to read the scenario with")
	}
	b := baggage.FromContext(ctx)
	if !Carries(b, dec) {
		return Scenario{}, false, nil
	}
	s, err := dec.Decode(b)
	if err != nil {
		return Scenario{}, true, err
	}
	return s, true, nil
}

// Carries reports whether b holds any of dec's members.
func Carries(b baggage.Baggage, dec Decoder) bool {
	if dec == nil {
		return false
	}
	for _, name := range dec.Members() {
		if b.Member(name).Key() != "" {
			return true
		}
	}
	return false
}
