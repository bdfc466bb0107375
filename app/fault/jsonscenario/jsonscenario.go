// Package jsonscenario is a codec of failure-injection scenarios: it writes
// a fit.Scenario as JSON in one W3C baggage member, and reads it back. A
// Codec is both a fit.Encoder and a fit.Decoder, so the tool that writes a
// scenario and the App that reads it share one definition.
//
// The member's value is a JSON object with one field, rules, each rule an
// object with its point and the fault's parts, every part that is zero left
// out:
//
//	{"rules":[{"point":"kube:deployments.apps:patch","abort":true},
//	          {"point":"kube:secrets:*","delay":"250ms","percent":50,"count":3}]}
//
// delay is a Go duration string, such as "250ms" or "1m30s". percent and
// count are loam extensions (see fit.Fault.Percent and fit.Rule.Count).
// So is ends, beside rules, when the experiment ends (fit.Scenario.Ends),
// an RFC 3339 time such as "2026-12-04T05:00:00Z", left out when the
// scenario has no end:
//
//	{"rules":[{"point":"kube:deployments.apps:patch","abort":true}],"ends":"2026-12-04T05:00:00Z"}
//
// and id, the experiment's identifier (fit.Scenario.ID), left out when "":
//
//	{"rules":[{"point":"kube:*","abort":true}],"id":"game-day-7"}
//
// A rule's status, in place of abort, answers with an HTTP error status
// (fit.Fault.Status), and retryAfter, a Go duration string of whole
// seconds, is the answer's Retry-After (fit.Fault.RetryAfter); both are
// loam extensions:
//
//	{"rules":[{"point":"kube:memcacheds.cache.example.com/status:patch","status":429,"retryAfter":"1s","count":2}]}
//
// In a baggage header or an annotation the value is percent-encoded, as W3C
// Baggage requires of '"', ',' and the other characters a baggage value
// can't hold:
//
//	acme.fault={%22rules%22:[{%22point%22:%22kube:deployments.apps:patch%22%2C%22abort%22:true}]}
//
// Decoding is strict, so a typo never silently weakens an experiment:
// a field name that isn't one of the above (names are case-sensitive), a
// field given twice, a value of the wrong type, a bad duration, trailing
// data, or a rule that fails fit.Scenario.Validate is an error naming the
// member and the problem.
package jsonscenario

import (
	"errors"
	"fmt"
	"time"

	json "encoding/json/v2"

	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/app/fault/fit"
)

// Codec writes and reads a scenario as JSON in one baggage member.
type Codec struct {
	member string
}

var (
	_ fit.Encoder = (*Codec)(nil)
	_ fit.Decoder = (*Codec)(nil)
)

// New returns a Codec of the baggage member named member. The name is the
// end user's, such as acme.fault; it must be a W3C Baggage key: one or more
// of the characters an HTTP token allows (letters, digits and
// !#$%&'*+-.^_`|~).
func New(member string) (*Codec, error) {
	if err := checkKey(member); err != nil {
		return nil, fmt.Errorf("jsonscenario: member name %q: %w", member, err)
	}
	return &Codec{member: member}, nil
}

// Member returns the name of the baggage member c reads and writes.
func (c *Codec) Member() string {
	if c == nil {
		return ""
	}
	return c.member
}

// Members returns the one member c owns. A nil Codec owns none.
func (c *Codec) Members() []string {
	if c == nil {
		return nil
	}
	return []string{c.member}
}

// Encode returns the member that carries s as JSON. It returns an error for
// a Scenario that fails Validate.
func (c *Codec) Encode(s fit.Scenario) ([]baggage.Member, error) {
	if c == nil {
		return nil, errors.New("jsonscenario: nil Codec")
	}
	value, err := c.Marshal(s)
	if err != nil {
		return nil, err
	}
	m, err := baggage.NewMemberRaw(c.member, string(value))
	if err != nil {
		return nil, fmt.Errorf("jsonscenario: member %q: %w", c.member, err)
	}
	return []baggage.Member{m}, nil
}

// Marshal returns s as the JSON a member's value holds, before
// percent-encoding. It returns an error for a Scenario that fails Validate.
func (c *Codec) Marshal(s fit.Scenario) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	w := wireScenario{Rules: make([]wireRule, len(s.Rules))}
	if !s.Ends.IsZero() {
		w.Ends = s.Ends.UTC().Format(time.RFC3339Nano)
	}
	w.ID = s.ID
	for i, r := range s.Rules {
		w.Rules[i] = wireRule{
			Point:   r.Point,
			Abort:   r.Fault.Abort,
			Status:  r.Fault.Status,
			Percent: r.Fault.Percent,
			Count:   r.Count,
		}
		if r.Fault.Delay != 0 {
			w.Rules[i].Delay = r.Fault.Delay.String()
		}
		if r.Fault.RetryAfter != 0 {
			w.Rules[i].RetryAfter = r.Fault.RetryAfter.String()
		}
	}
	value, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("jsonscenario: %w", err)
	}
	return value, nil
}

// Decode returns the scenario that b's member carries. Without the member,
// it returns the zero Scenario and no error. A value that isn't a scenario
// is a *fit.DecodeError naming the member and every problem found.
func (c *Codec) Decode(b baggage.Baggage) (fit.Scenario, error) {
	if c == nil {
		return fit.Scenario{}, nil
	}
	m := b.Member(c.member)
	if m.Key() == "" {
		return fit.Scenario{}, nil
	}
	s, err := c.Unmarshal([]byte(m.Value()))
	if err != nil {
		return fit.Scenario{}, &fit.DecodeError{Member: c.member, Err: err}
	}
	return s, nil
}

// Unmarshal returns the scenario that value, a member's value after
// percent-decoding, holds. It returns an error naming every problem.
func (c *Codec) Unmarshal(value []byte) (fit.Scenario, error) {
	var w wireScenario
	if err := json.Unmarshal(value, &w, json.RejectUnknownMembers(true)); err != nil {
		return fit.Scenario{}, err
	}
	if w.Rules == nil {
		return fit.Scenario{}, errors.New(`no "rules" field`)
	}
	s := fit.Scenario{ID: w.ID}
	if len(w.Rules) > 0 {
		s.Rules = make([]fit.Rule, len(w.Rules))
	}
	var errs []error
	if w.Ends != "" {
		ends, err := time.Parse(time.RFC3339Nano, w.Ends)
		if err != nil {
			errs = append(errs, fmt.Errorf("ends %q is not an RFC 3339 time, such as 2026-12-04T05:00:00Z", w.Ends))
		}
		// One instant, however it was written, so that a scenario decodes
		// to the same value in every process.
		s.Ends = ends.UTC()
	}
	for i, wr := range w.Rules {
		r := fit.Rule{
			Point: wr.Point,
			Fault: fit.Fault{Abort: wr.Abort, Status: wr.Status, Percent: wr.Percent},
			Count: wr.Count,
		}
		if wr.Delay != "" {
			d, err := time.ParseDuration(wr.Delay)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %d: delay: %w", i, err))
			}
			r.Fault.Delay = d
		}
		if wr.RetryAfter != "" {
			d, err := time.ParseDuration(wr.RetryAfter)
			if err != nil {
				errs = append(errs, fmt.Errorf("rule %d: retryAfter: %w", i, err))
			}
			r.Fault.RetryAfter = d
		}
		s.Rules[i] = r
	}
	errs = append(errs, s.Validate())
	if err := errors.Join(errs...); err != nil {
		return fit.Scenario{}, err
	}
	return s, nil
}

// wireScenario is a scenario as JSON holds it.
type wireScenario struct {
	Rules []wireRule `json:"rules"`
	Ends  string     `json:"ends,omitzero"`
	ID    string     `json:"id,omitzero"`
}

// wireRule is a rule as JSON holds it: the fault's parts inline, each left
// out when zero, the delay as a Go duration string.
type wireRule struct {
	Point      string  `json:"point"`
	Abort      bool    `json:"abort,omitzero"`
	Delay      string  `json:"delay,omitzero"`
	Status     int     `json:"status,omitzero"`
	RetryAfter string  `json:"retryAfter,omitzero"`
	Percent    float64 `json:"percent,omitzero"`
	Count      int     `json:"count,omitzero"`
}

// checkKey reports whether name is a W3C Baggage key: an RFC 7230 token.
func checkKey(name string) error {
	if name == "" {
		return errors.New("empty: a W3C Baggage key has at least one character")
	}
	for i, r := range name {
		if r >= 0x80 || !isTokenChar(byte(r)) {
			return fmt.Errorf("character %q at byte %d is not allowed in a W3C Baggage key", r, i)
		}
	}
	return nil
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
