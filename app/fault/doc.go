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
// A delay in progress ends early when failure injection is turned off or
// its scenario reaches its end: the call then goes on unfaulted, and the
// span gets the event loam.fit.lifted, with loam.fit.point, loam.fit.delay
// (the delay met), loam.fit.waited (double, seconds: how long it lasted)
// and loam.fit.reason ("off" or "expired"), and the Logger an INFO record,
// "injected delay lifted: the call goes on unfaulted", with the same
// attributes. A delay its context ends fails the call (Inject).
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
