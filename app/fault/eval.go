package fault

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app/fault/fit"
)

// Eval returns the Fault that point meets in ctx: the Fault of the first
// rule of ctx's scenario that matches point, after Count and Percent have
// had their say. The Fault returned is to be carried out as it is: its
// Percent is always 0.
//
// The scenario is decoded from ctx's baggage on every call. When ctx
// carries none of the Decoder's members, or i is inert, Eval returns the
// zero Fault at once and records nothing. Otherwise it records
// loam.fit.evaluation on the span in ctx. A scenario that can't be decoded
// fails safe: the point meets the zero Fault, and the event says why.
func (i *Injector) Eval(ctx context.Context, point string) fit.Fault {
	f, _ := i.eval(ctx, point)
	return f
}

// eval is Eval, which also returns the scenario, for its ID and its end:
// the zero Scenario when ctx carries none or it can't be decoded.
func (i *Injector) eval(ctx context.Context, point string) (fit.Fault, fit.Scenario) {
	if !i.On() {
		return fit.Fault{}, fit.Scenario{}
	}
	b := baggage.FromContext(ctx)
	if !i.holds(b) {
		return fit.Fault{}, fit.Scenario{}
	}
	span := trace.SpanFromContext(ctx)
	s, err := i.decode(b)
	if err != nil {
		if span.IsRecording() {
			span.AddEvent(EvaluationEvent, trace.WithAttributes(
				PointKey.String(point),
				MatchedKey.Bool(false),
				AbortKey.Bool(false),
				DelayKey.Float64(0),
				errorTypeKey.String(ErrorType(err)),
				errorMessageKey.String(err.Error()),
			))
		}
		return fit.Fault{}, fit.Scenario{}
	}
	if s.Expired(i.now()) {
		if span.IsRecording() {
			attrs := []attribute.KeyValue{PointKey.String(point), ExpiredKey.Bool(true), EndsKey.String(s.Ends.UTC().Format(time.RFC3339Nano))}
			span.AddEvent(StripEvent, trace.WithAttributes(withExperiment(attrs, s.ID)...))
		}
		return fit.Fault{}, s
	}
	rule, f := i.decide(b, s, point)
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 6)
		attrs = append(attrs, PointKey.String(point), MatchedKey.Bool(rule >= 0))
		if rule >= 0 {
			attrs = append(attrs, RuleKey.Int(rule))
		}
		attrs = append(attrs, AbortKey.Bool(f.Abort), DelayKey.Float64(f.Delay.Seconds()))
		attrs = withStatus(attrs, f)
		span.AddEvent(EvaluationEvent, trace.WithAttributes(withExperiment(attrs, s.ID)...))
	}
	if !f.IsZero() && i.logger != nil {
		i.record(ctx, point, f, s.ID)
	}
	return f, s
}

// decode returns the scenario b carries, refusing one without an end when
// the Settings require one.
func (i *Injector) decode(b baggage.Baggage) (fit.Scenario, error) {
	s, err := i.decoder.Decode(b)
	if err != nil {
		return fit.Scenario{}, err
	}
	if i.requireEnd && s.Ends.IsZero() {
		return fit.Scenario{}, &fit.DecodeError{Err: ErrNoEnd}
	}
	return s, nil
}

// decide returns the index of the rule of s that decides point, or -1 when
// none matches, and the Fault point meets. b is the baggage s came from,
// whose members' values identify s for Count.
func (i *Injector) decide(b baggage.Baggage, s fit.Scenario, point string) (int, fit.Fault) {
	var counts []int // s's counts, looked up the first time a rule with a Count matches
	for idx, r := range s.Rules {
		if !r.Matches(point) {
			continue
		}
		if r.Fault.Always() && r.Count == 0 {
			return idx, r.Fault.Met()
		}
		f, used, ok := i.draw(b, s, idx, &counts)
		if !used {
			continue
		}
		if !ok {
			return idx, fit.Fault{}
		}
		return idx, f
	}
	return -1, fit.Fault{}
}

// draw decides, under i's lock, whether rule idx of s, which matches,
// injects its fault now. used is false when the rule's Count is spent, so
// the rule no longer matches; ok is false when Percent spares this
// evaluation.
func (i *Injector) draw(b baggage.Baggage, s fit.Scenario, idx int, counts *[]int) (f fit.Fault, used, ok bool) {
	r := s.Rules[idx]
	i.mu.Lock()
	defer i.mu.Unlock()
	if r.Count > 0 {
		if *counts == nil {
			*counts = i.counts.get(i.scenarioKey(b), len(s.Rules))
		}
		if (*counts)[idx] >= r.Count {
			return fit.Fault{}, false, false
		}
	}
	if !r.Fault.Always() && i.rand()*100 >= r.Fault.Percent {
		return fit.Fault{}, true, false
	}
	if r.Count > 0 {
		(*counts)[idx]++
	}
	return r.Fault.Met(), true, true
}

// scenarioKey identifies the scenario b carries by its members' values.
func (i *Injector) scenarioKey(b baggage.Baggage) string {
	var key []byte
	for _, name := range i.members {
		m := b.Member(name)
		key = fmt.Appendf(key, "%d:%s%d:%s", len(name), name, len(m.Value()), m.Value())
	}
	return string(key)
}
