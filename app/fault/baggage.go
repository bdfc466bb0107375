package fault

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app/fault/fit"
)

// Strip returns b without the Decoder's members, with every other member
// kept, and records loam.fit.strip on the span in ctx when it removed any.
// Use it before a call to a dependency that takes no part in failure
// injection, so the scenario doesn't reach it. An inert Injector strips
// nothing.
func (i *Injector) Strip(ctx context.Context, b baggage.Baggage) baggage.Baggage {
	if !i.Enabled() || !i.holds(b) {
		return b
	}
	var attrs []attribute.KeyValue
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		// Decoded only to name the experiment on the event.
		if s, err := i.decoder.Decode(b); err == nil {
			attrs = withExperiment(nil, s.ID)
		}
	}
	for _, name := range i.members {
		b = b.DeleteMember(name)
	}
	trace.SpanFromContext(ctx).AddEvent(StripEvent, trace.WithAttributes(attrs...))
	return b
}

// StripContext returns ctx with the Decoder's members stripped from its
// baggage, as Strip does, and records loam.fit.strip on the span in ctx when
// it removed any. It returns ctx itself when there was nothing to strip.
func (i *Injector) StripContext(ctx context.Context) context.Context {
	b := baggage.FromContext(ctx)
	if !i.Enabled() || !i.holds(b) {
		return ctx
	}
	return baggage.ContextWithBaggage(ctx, i.Strip(ctx, b))
}

// Ends returns when the scenario b carries ends, and false when it
// carries none, or one without an end, or one the Decoder can't read, or
// while failure injection is off, when it decodes nothing.
func (i *Injector) Ends(b baggage.Baggage) (time.Time, bool) {
	if !i.On() || !i.holds(b) {
		return time.Time{}, false
	}
	s, err := i.decode(b)
	if err != nil || s.Ends.IsZero() {
		return time.Time{}, false
	}
	return s.Ends, true
}

// Restrict returns b's members that the Decoder owns, and no other.
func (i *Injector) Restrict(b baggage.Baggage) baggage.Baggage {
	if !i.Enabled() || !i.holds(b) {
		return baggage.Baggage{}
	}
	var kept []baggage.Member
	for _, name := range i.members {
		if m := b.Member(name); m.Key() != "" {
			kept = append(kept, m)
		}
	}
	// The members came from a Baggage, so they are valid and within its
	// limits: New can't fail.
	r, _ := baggage.New(kept...)
	return r
}

// ScenarioFromBaggage reads value, a W3C baggage string such as a
// Kubernetes object's annotation holds, and returns the baggage of the
// Decoder's members in it, without any other member. When value holds none
// of them, or i is inert, it returns empty baggage (Len 0) and no error. A
// value that isn't W3C baggage, or whose scenario the Decoder can't read,
// returns a *fit.DecodeError.
func (i *Injector) ScenarioFromBaggage(value string) (baggage.Baggage, error) {
	if !i.Enabled() {
		return baggage.Baggage{}, nil
	}
	b, err := baggage.Parse(value)
	if err != nil {
		return baggage.Baggage{}, &fit.DecodeError{Err: err}
	}
	r := i.Restrict(b)
	if r.Len() == 0 {
		return r, nil
	}
	if _, err := i.decode(r); err != nil {
		if de := (*fit.DecodeError)(nil); !errors.As(err, &de) {
			err = &fit.DecodeError{Err: err}
		}
		return baggage.Baggage{}, err
	}
	return r, nil
}
