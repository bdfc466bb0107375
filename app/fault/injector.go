// Package fault is an App's failure injector. It evaluates injection points
// against the failure scenario a context's W3C baggage carries, and carries
// out the fault a point meets: an abort fails the call with an
// *InjectedError, and a delay waits inside the call's context.
//
// An Injector reads scenarios with the Decoder its Settings name, such as
// package jsonscenario's, and decodes the scenario on every evaluation, so
// a scenario lives exactly as long as the context that carries it. A
// context that carries none of the Decoder's members costs a few
// nanoseconds: no decoding, no event and no allocation.
//
// An App without failure injection holds Inert(), which evaluates every
// point to the zero Fault and decodes nothing; a nil *Injector behaves the
// same.
//
// # Telemetry
//
// Evaluating a point of a context that carries a scenario adds the event
// loam.fit.evaluation to the span in the context, with these attributes:
//
//   - loam.fit.point (string): the point evaluated;
//   - loam.fit.matched (bool): whether a rule matched the point;
//   - loam.fit.rule (int): the index of the rule that matched, only when
//     one did;
//   - loam.fit.abort (bool): whether the point meets an abort;
//   - loam.fit.delay (double, seconds): the delay the point meets, 0 for
//     none;
//   - loam.fit.status (int): the status the point is answered with
//     (fit.Fault.Status, a loam extension), only when it meets one;
//   - error.type and error.message: only when the scenario can't be
//     decoded, in which case the point meets the zero Fault.
//
// Stripping the scenario from baggage adds the event loam.fit.strip, with no
// attributes, when there was something to strip.
//
// A scenario past its end (fit.Scenario.Ends) fails nothing: evaluating a
// point in a context that carries one records loam.fit.strip in place of
// loam.fit.evaluation, with loam.fit.expired (bool, true) and
// loam.fit.ends (string, the end in RFC 3339), and the point meets the
// zero Fault. The Injector reads the time from the Settings' Now.
//
// A scenario with an ID (fit.Scenario.ID) puts it on every one of these
// events as loam.fit.experiment, and in every *InjectedError it causes.
// Each abort, status and delay a point meets is also an INFO record,
// "fault injected", through the Settings' Logger, with loam.fit.point,
// loam.fit.abort, loam.fit.delay, loam.fit.status (for a status) and
// loam.fit.experiment.
//
// # Extensions
//
// Two parts of a rule are loam's own: fit.Fault.Percent and fit.Rule.Count.
// A rule with a Percent between 0 and 100 meets its fault only on that
// share of the evaluations it matches, drawn from the Settings' Rand; the
// others meet the zero Fault. A rule with a Count injects its fault at most
// Count times per scenario, then stops matching, so the rules after it
// decide. The Injector counts per scenario value: every context whose
// baggage carries the same members with the same values shares one count,
// however it got them, such as every reconcile of an object with the same
// annotation, or every request with the same baggage header. A different
// value, even a single character, counts afresh. An evaluation that Percent
// spares isn't counted. The Injector keeps the counts of the 1024 scenarios
// it met most recently and forgets older ones, which then count afresh.
package fault

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"

	"github.com/loam-dev/loam/app/fault/fit"
)

// The span events an Injector records.
const (
	// EvaluationEvent is recorded for every evaluation of a point in a
	// context that carries a scenario.
	EvaluationEvent = "loam.fit.evaluation"
	// StripEvent is recorded for every strip that removed a scenario.
	StripEvent = "loam.fit.strip"
)

// The attributes of EvaluationEvent.
const (
	PointKey   = attribute.Key("loam.fit.point")
	MatchedKey = attribute.Key("loam.fit.matched")
	RuleKey    = attribute.Key("loam.fit.rule")
	AbortKey   = attribute.Key("loam.fit.abort")
	DelayKey   = attribute.Key("loam.fit.delay")
	// StatusKey (int) is the status the point is answered with
	// (fit.Fault.Status), only when it is answered with one.
	StatusKey = attribute.Key("loam.fit.status")
)

// The attributes of the StripEvent of an expired scenario.
const (
	ExpiredKey = attribute.Key("loam.fit.expired")
	EndsKey    = attribute.Key("loam.fit.ends")
)

// ExperimentKey is the scenario's ID (fit.Scenario.ID), on every event and
// record of a scenario that has one.
const ExperimentKey = attribute.Key("loam.fit.experiment")

// InjectedBody is the body of the record of each injected fault.
const InjectedBody = "fault injected"

// The error attributes OpenTelemetry's semantic conventions name.
const (
	errorTypeKey    = attribute.Key("error.type")
	errorMessageKey = attribute.Key("error.message")
)

// maxCountedScenarios bounds how many scenarios' Counts an Injector keeps.
const maxCountedScenarios = 1024

// Settings configures an Injector.
type Settings struct {
	// Decoder reads the scenario from a context's baggage, and names the
	// members that carry it. It is required.
	Decoder fit.Decoder

	// Rand returns a number in [0, 1), for rules with a Percent. It is
	// called with the Injector's lock held, so it need not be safe for
	// concurrent use. Nil means a source the Injector owns, seeded afresh
	// for each Injector; never a process-wide one.
	Rand func() float64

	// Now returns the time, which a scenario's end is compared with. Nil
	// means the real clock.
	Now func() time.Time

	// RequireEnd refuses every scenario without an end (fit.Scenario.Ends),
	// as a production cluster that allows only time-boxed experiments
	// does: such a scenario is read as one that doesn't decode, an error
	// wrapping ErrNoEnd, so it fails nothing.
	RequireEnd bool

	// Logger, when not nil, receives an INFO record of each abort and
	// delay a point meets, in the context of its call, so that an
	// unsampled trace still leaves one: app.Run sets the App's own.
	Logger log.Logger

	// Switch, when not "", is the path of the kill switch's file on the
	// App's Host: app.Run reads it before Init and every SwitchPeriod
	// after, and failure injection is on only while the file holds "on"
	// (SetOn). Anything else, or a file that can't be read, is off, with a
	// record saying why. "" leaves failure injection on.
	Switch string
}

// SwitchPeriod is how often app.Run reads the kill switch's file: a switch
// turned on or off takes effect within this long, well inside 5 seconds,
// at the cost of reading a small file once a second.
const SwitchPeriod = time.Second

// ErrNoEnd is what a scenario without an end decodes to when the Settings
// have RequireEnd.
var ErrNoEnd = errors.New("the scenario has no end, and fault.Settings.RequireEnd refuses every scenario without one")

// Injector evaluates injection points against the scenario a context
// carries, and carries out the faults it finds. It is safe for concurrent
// use. A nil *Injector is inert, as Inert's is.
type Injector struct {
	decoder    fit.Decoder
	members    []string
	now        func() time.Time
	requireEnd bool
	logger     log.Logger
	switchFile string

	// off is the kill switch: while it is set, every point evaluates as
	// if no scenario were present.
	off atomic.Bool
	// watchers are told of each change of off; see OnChange.
	watchers watchers

	mu     sync.Mutex // guards rand and counts
	rand   func() float64
	counts *countCache
}

// New returns an Injector configured by settings. It reports every mistake
// in settings together: a nil Decoder, or one that owns no member, or a
// member name that isn't a W3C Baggage key.
func New(settings Settings) (*Injector, error) {
	if settings.Decoder == nil {
		return nil, errors.New("fault: Settings.Decoder is nil: name the codec that reads scenarios, such as jsonscenario's")
	}
	members := append([]string(nil), settings.Decoder.Members()...)
	var errs []error
	if len(members) == 0 {
		errs = append(errs, errors.New("fault: Settings.Decoder owns no baggage member"))
	}
	seen := make(map[string]bool, len(members))
	for _, name := range members {
		if !validKey(name) {
			errs = append(errs, fmt.Errorf("fault: Settings.Decoder's member %q is not a W3C Baggage key", name))
		}
		if seen[name] {
			errs = append(errs, fmt.Errorf("fault: Settings.Decoder names member %q twice", name))
		}
		seen[name] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := settings.Rand
	if r == nil {
		var seed [32]byte
		_, _ = crand.Read(seed[:]) // never fails: crypto/rand.Read crashes the program instead
		r = rand.New(rand.NewChaCha8(seed)).Float64
	}
	now := settings.Now
	if now == nil {
		now = time.Now
	}
	return &Injector{
		decoder:    settings.Decoder,
		members:    members,
		now:        now,
		requireEnd: settings.RequireEnd,
		switchFile: settings.Switch,
		logger:     settings.Logger,
		rand:       r,
		counts:     newCountCache(maxCountedScenarios),
	}, nil
}

// Inert returns an Injector that evaluates every point to the zero Fault,
// decodes nothing, strips nothing and records nothing: an App's injector
// when failure injection is off.
func Inert() *Injector {
	return &Injector{}
}

// Enabled reports whether i injects failures: whether New built it.
func (i *Injector) Enabled() bool {
	return i != nil && i.decoder != nil
}

// SetOn turns failure injection on or off while the App runs: off, every
// point evaluates to the zero Fault as if no scenario were present, and
// records nothing, at the cost of a context without one. Scenarios are
// still stripped where they must not go. An Injector New builds starts
// on; an inert one ignores it. A change is told to every OnChange
// function, in the caller's goroutine, before SetOn returns.
func (i *Injector) SetOn(on bool) {
	if !i.Enabled() {
		return
	}
	// Serialized, so the functions hear the changes in the order they
	// were made.
	i.watchers.mu.Lock()
	defer i.watchers.mu.Unlock()
	if i.off.Swap(!on) == !on {
		return
	}
	for _, f := range i.watchers.fs {
		f(on)
	}
}

// OnChange has f called with the new state each time SetOn turns i on or
// off, until the returned stop is called: a Kubernetes controller reconciles
// at once the objects whose reconciles failed under a scenario when
// failure injection is turned off. f runs in SetOn's caller and must not
// block, nor call SetOn or OnChange. An inert i never calls it.
func (i *Injector) OnChange(f func(on bool)) (stop func()) {
	if !i.Enabled() {
		return func() {}
	}
	i.watchers.mu.Lock()
	defer i.watchers.mu.Unlock()
	i.watchers.next++
	id := i.watchers.next
	if i.watchers.fs == nil {
		i.watchers.fs = map[uint64]func(bool){}
	}
	i.watchers.fs[id] = f
	return func() {
		i.watchers.mu.Lock()
		defer i.watchers.mu.Unlock()
		delete(i.watchers.fs, id)
	}
}

// watchers are the functions OnChange registered, by a number of their
// own.
type watchers struct {
	mu   sync.Mutex
	next uint64
	fs   map[uint64]func(on bool)
}

// SwitchFile returns the path of the kill switch's file its Settings
// named, which app.Run reads, or "" when they named none or i is inert.
func (i *Injector) SwitchFile() string {
	if i == nil {
		return ""
	}
	return i.switchFile
}

// On reports whether i injects failures now: whether it is Enabled and
// its switch is on.
func (i *Injector) On() bool { return i.Enabled() && !i.off.Load() }

// Decoder returns the Decoder i reads scenarios with, or nil when i is
// inert.
func (i *Injector) Decoder() fit.Decoder {
	if !i.Enabled() {
		return nil
	}
	return i.decoder
}

// Carries reports whether ctx's baggage holds any of the Decoder's members:
// whether evaluating a point in ctx consults a scenario. It is false for an
// inert Injector.
func (i *Injector) Carries(ctx context.Context) bool {
	return i.Enabled() && i.holds(baggage.FromContext(ctx))
}

// holds reports whether b has any of i's members.
func (i *Injector) holds(b baggage.Baggage) bool {
	if b.Len() == 0 {
		return false
	}
	for _, name := range i.members {
		if b.Member(name).Key() != "" {
			return true
		}
	}
	return false
}

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

// eval is Eval, which also returns the scenario's ID.
func (i *Injector) eval(ctx context.Context, point string) (fit.Fault, string) {
	if !i.On() {
		return fit.Fault{}, ""
	}
	b := baggage.FromContext(ctx)
	if !i.holds(b) {
		return fit.Fault{}, ""
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
		return fit.Fault{}, ""
	}
	if s.Expired(i.now()) {
		if span.IsRecording() {
			attrs := []attribute.KeyValue{PointKey.String(point), ExpiredKey.Bool(true), EndsKey.String(s.Ends.UTC().Format(time.RFC3339Nano))}
			span.AddEvent(StripEvent, trace.WithAttributes(withExperiment(attrs, s.ID)...))
		}
		return fit.Fault{}, s.ID
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
	return f, s.ID
}

// withExperiment returns attrs with the experiment's ID, when it has one.
func withExperiment(attrs []attribute.KeyValue, id string) []attribute.KeyValue {
	if id == "" {
		return attrs
	}
	return append(attrs, ExperimentKey.String(id))
}

// withStatus returns attrs with f's status, when it has one.
func withStatus(attrs []attribute.KeyValue, f fit.Fault) []attribute.KeyValue {
	if f.Status == 0 {
		return attrs
	}
	return append(attrs, StatusKey.Int(f.Status))
}

// record emits the record of a fault point met in ctx.
func (i *Injector) record(ctx context.Context, point string, f fit.Fault, id string) {
	var r log.Record
	r.SetTimestamp(i.now())
	r.SetSeverity(log.SeverityInfo)
	r.SetSeverityText(log.SeverityInfo.String())
	r.SetBody(attribute.StringValue(InjectedBody))
	r.AddAttributes(withExperiment(withStatus([]attribute.KeyValue{
		PointKey.String(point), AbortKey.Bool(f.Abort), DelayKey.Float64(f.Delay.Seconds()),
	}, f), id)...)
	i.logger.Emit(ctx, r)
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

// Inject evaluates point in ctx, as Eval does, and carries out the Fault it
// meets. A delay is waited first, inside ctx: when ctx is done before the
// delay is over, Inject returns at once with an *InjectedError that wraps
// ctx's cause, so errors.Is finds context.DeadlineExceeded or
// context.Canceled in it. Then an abort or a status returns an
// *InjectedError, and the caller goes no further: an abort is a call that
// never reached its dependency, and a status one its dependency refused.
// A caller that answers for its dependency reads the status from the
// error's Fault (package transport answers as the API server would);
// any other fails the call with the error. The zero Fault returns nil at
// once.
func (i *Injector) Inject(ctx context.Context, point string) error {
	f, id := i.eval(ctx, point)
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return &InjectedError{Point: point, Fault: f, Cause: context.Cause(ctx), Experiment: id}
		}
	}
	if f.Fails() {
		return &InjectedError{Point: point, Fault: f, Experiment: id}
	}
	return nil
}

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
// carries none, or one without an end, or one the Decoder can't read.
func (i *Injector) Ends(b baggage.Baggage) (time.Time, bool) {
	if !i.Enabled() || !i.holds(b) {
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

// ErrorType returns the value of the error.type attribute OpenTelemetry's
// semantic conventions give err: the package path and name of err's own
// type, without a pointer, such as
// github.com/loam-dev/loam/app/fault.InjectedError. It doesn't look
// inside a wrapped error; use errors.As first to name one. A nil err has
// no type, and returns "".
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" || t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// validKey reports whether name is a W3C Baggage key: an RFC 7230 token.
func validKey(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '!', c == '#', c == '$', c == '%', c == '&', c == '\'', c == '*',
			c == '+', c == '-', c == '.', c == '^', c == '_', c == '`', c == '|', c == '~':
		default:
			return false
		}
	}
	return true
}
