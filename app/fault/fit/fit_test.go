package fit_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/app/fault/fit"
)

func TestRuleMatches(t *testing.T) {
	tests := []struct {
		rule  string
		point string
		want  bool
	}{
		{"kube:deployments.apps:patch", "kube:deployments.apps:patch", true},
		{"kube:deployments.apps:patch", "kube:deployments.apps:get", false},
		{"kube:deployments.apps:patch", "kube:deployments.apps:patchx", false},
		{"kube:deployments.apps:patch", "kube:deployments.apps:pat", false},
		{"kube:deployments.apps:*", "kube:deployments.apps:patch", true},
		{"kube:deployments.apps:*", "kube:deployments.apps:", true},
		{"kube:deployments.apps:*", "kube:deployments.apps/scale:patch", false},
		{"kube:deployments.apps:*", "kube:secrets:get", false},
		{"kube:deployments.apps*", "kube:deployments.apps/scale:patch", true},
		{"kube:*", "kube:secrets:get", true},
		{"kube:*", "http:example.com:443", false},
		{"*", "kube:secrets:get", true},
		{"*", "", true},
		{"kube:secrets:get", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"~"+tt.point, func(t *testing.T) {
			require.Equal(t, tt.want, fit.Rule{Point: tt.rule}.Matches(tt.point))
		})
	}
}

func TestScenarioMatch(t *testing.T) {
	s := fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:secrets:get"},
		{Point: "kube:secrets:*", Fault: fit.Fault{Abort: true}},
		{Point: "kube:*", Fault: fit.Fault{Delay: time.Second}},
		{Point: "kube:secrets:list", Fault: fit.Fault{Abort: true}},
	}}
	tests := []struct {
		point string
		want  int
		ok    bool
	}{
		{"kube:secrets:get", 0, true},  // the exemption comes first
		{"kube:secrets:list", 1, true}, // the prefix before the exact rule wins
		{"kube:pods:get", 2, true},
		{"http:example.com:443", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			i, ok := s.Match(tt.point)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, i)
		})
	}

	i, ok := fit.Scenario{}.Match("kube:pods:get")
	require.False(t, ok, "the zero Scenario matches nothing")
	require.Equal(t, -1, i)
}

func TestFault(t *testing.T) {
	require.True(t, fit.Fault{}.IsZero())
	require.True(t, fit.Fault{Percent: 50}.IsZero(), "Percent alone injects nothing")
	require.False(t, fit.Fault{Abort: true}.IsZero())
	require.False(t, fit.Fault{Delay: time.Millisecond}.IsZero())
	require.False(t, fit.Fault{Status: 503}.IsZero())
	require.True(t, fit.Fault{RetryAfter: time.Second}.IsZero(), "RetryAfter alone injects nothing")

	require.True(t, fit.Fault{Abort: true}.Fails())
	require.True(t, fit.Fault{Status: 429, Delay: time.Second}.Fails())
	require.False(t, fit.Fault{Delay: time.Second}.Fails(), "a delay alone lets the call go ahead")

	require.True(t, fit.Fault{}.Always())
	require.True(t, fit.Fault{Percent: 100}.Always())
	require.False(t, fit.Fault{Percent: 99.9}.Always())
	require.False(t, fit.Fault{Percent: 0.1}.Always())
}

func TestScenarioValidate(t *testing.T) {
	valid := fit.Scenario{Rules: []fit.Rule{
		{Point: "*"},
		{Point: "kube:secrets:*", Fault: fit.Fault{Abort: true, Delay: time.Second, Percent: 100}, Count: 3},
		{Point: "kube:pods:get", Fault: fit.Fault{Percent: 0.5}},
		{Point: "kube:pods:list", Fault: fit.Fault{Status: 429, RetryAfter: 2 * time.Second, Delay: time.Second}},
		{Point: "kube:pods:create", Fault: fit.Fault{Status: 400}},
		{Point: "kube:pods:delete", Fault: fit.Fault{Status: 599}},
	}}
	require.NoError(t, valid.Validate())
	require.NoError(t, fit.Scenario{}.Validate())

	tests := []struct {
		name string
		rule fit.Rule
		want []string
	}{
		{"empty point", fit.Rule{}, []string{`rule 0 (point ""): point is empty`}},
		{"star inside", fit.Rule{Point: "kube:*:patch"}, []string{"'*' may appear only at the end"}},
		{"two stars", fit.Rule{Point: "kube:**"}, []string{"'*' may appear only at the end"}},
		{"negative delay", fit.Rule{Point: "p", Fault: fit.Fault{Delay: -time.Second}}, []string{"delay -1s is negative"}},
		{"percent above 100", fit.Rule{Point: "p", Fault: fit.Fault{Percent: 100.5}}, []string{"percent 100.5 is not between 0 and 100"}},
		{"negative percent", fit.Rule{Point: "p", Fault: fit.Fault{Percent: -1}}, []string{"percent -1 is not between 0 and 100"}},
		{"NaN percent", fit.Rule{Point: "p", Fault: fit.Fault{Percent: math.NaN()}}, []string{"percent NaN"}},
		{"negative count", fit.Rule{Point: "p", Count: -1}, []string{"count -1 is negative"}},
		{"a success status", fit.Rule{Point: "p", Fault: fit.Fault{Status: 200}}, []string{"status 200 is not an HTTP error status, from 400 to 599"}},
		{"a status past 599", fit.Rule{Point: "p", Fault: fit.Fault{Status: 600}}, []string{"status 600 is not an HTTP error status"}},
		{"a negative status", fit.Rule{Point: "p", Fault: fit.Fault{Status: -1}}, []string{"status -1 is not an HTTP error status"}},
		{"status with abort", fit.Rule{Point: "p", Fault: fit.Fault{Status: 503, Abort: true}}, []string{"status 503 and abort are exclusive"}},
		{"negative retry-after", fit.Rule{Point: "p", Fault: fit.Fault{Status: 429, RetryAfter: -time.Second}}, []string{"retry-after -1s is negative"}},
		{"retry-after in part of a second", fit.Rule{Point: "p", Fault: fit.Fault{Status: 429, RetryAfter: 1500 * time.Millisecond}}, []string{"retry-after 1.5s is not whole seconds"}},
		{"retry-after without a status", fit.Rule{Point: "p", Fault: fit.Fault{RetryAfter: time.Second}}, []string{"retry-after 1s has no status to answer with"}},
		{
			"every mistake at once",
			fit.Rule{Fault: fit.Fault{Delay: -1, Percent: 101}, Count: -2},
			[]string{"point is empty", "delay -1ns is negative", "percent 101", "count -2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fit.Scenario{Rules: []fit.Rule{tt.rule}}.Validate()
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
			require.Len(t, strings.Split(err.Error(), "\n"), len(tt.want), "one line per mistake")
		})
	}

	err := fit.Scenario{Rules: []fit.Rule{{Point: "ok"}, {}, {Point: "x", Count: -1}}}.Validate()
	require.ErrorContains(t, err, `rule 1 (point "")`)
	require.ErrorContains(t, err, `rule 2 (point "x")`)
}

// memberCodec is a codec of two members, one for abort rules and one for
// delay rules, to show that nothing assumes a codec has one member.
type memberCodec struct{ fail error }

func (c memberCodec) Members() []string { return []string{"t.abort", "t.delay"} }

func (c memberCodec) Encode(s fit.Scenario) ([]baggage.Member, error) {
	if c.fail != nil {
		return nil, c.fail
	}
	var aborts, delays []string
	for _, r := range s.Rules {
		if r.Fault.Abort {
			aborts = append(aborts, r.Point)
		} else {
			delays = append(delays, r.Point+"@"+r.Fault.Delay.String())
		}
	}
	a, err := baggage.NewMemberRaw("t.abort", strings.Join(aborts, " "))
	if err != nil {
		return nil, err
	}
	d, err := baggage.NewMemberRaw("t.delay", strings.Join(delays, " "))
	if err != nil {
		return nil, err
	}
	return []baggage.Member{a, d}, nil
}

func (c memberCodec) Decode(b baggage.Baggage) (fit.Scenario, error) {
	var s fit.Scenario
	for p := range strings.FieldsSeq(b.Member("t.abort").Value()) {
		s.Rules = append(s.Rules, fit.Rule{Point: p, Fault: fit.Fault{Abort: true}})
	}
	for pd := range strings.FieldsSeq(b.Member("t.delay").Value()) {
		p, ds, _ := strings.Cut(pd, "@")
		d, err := time.ParseDuration(ds)
		if err != nil {
			return fit.Scenario{}, &fit.DecodeError{Member: "t.delay", Err: err}
		}
		s.Rules = append(s.Rules, fit.Rule{Point: p, Fault: fit.Fault{Delay: d}})
	}
	return s, nil
}

func TestContextWithScenario(t *testing.T) {
	tenant, err := baggage.NewMemberRaw("tenant", "a")
	require.NoError(t, err)
	stale, err := baggage.NewMemberRaw("t.abort", "stale")
	require.NoError(t, err)
	b, err := baggage.New(tenant, stale)
	require.NoError(t, err)
	ctx := baggage.ContextWithBaggage(t.Context(), b)

	s := fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:secrets:get", Fault: fit.Fault{Abort: true}},
		{Point: "kube:pods:*", Fault: fit.Fault{Delay: 250 * time.Millisecond}},
	}}
	ctx, err = fit.ContextWithScenario(ctx, memberCodec{}, s)
	require.NoError(t, err)

	got := baggage.FromContext(ctx)
	require.Equal(t, "a", got.Member("tenant").Value(), "other members are kept")
	require.Equal(t, "kube:secrets:get", got.Member("t.abort").Value(), "the codec's members replace old ones")
	require.Equal(t, 3, got.Len())

	back, ok, err := fit.FromContext(ctx, memberCodec{})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, s, back)
	require.True(t, fit.Carries(got, memberCodec{}))
}

func TestContextWithScenarioMistakes(t *testing.T) {
	ctx := t.Context()
	_, err := fit.ContextWithScenario(ctx, nil, fit.Scenario{})
	require.ErrorContains(t, err, "no Encoder")

	_, err = fit.ContextWithScenario(ctx, memberCodec{}, fit.Scenario{Rules: []fit.Rule{{}}})
	require.ErrorContains(t, err, "point is empty")

	boom := context.DeadlineExceeded
	got, err := fit.ContextWithScenario(ctx, memberCodec{fail: boom}, fit.Scenario{})
	require.ErrorIs(t, err, boom)
	require.Equal(t, ctx, got, "ctx comes back unchanged")

	long := fit.Scenario{}
	for range 1000 {
		long.Rules = append(long.Rules, fit.Rule{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}})
	}
	_, err = fit.ContextWithScenario(ctx, memberCodec{}, long)
	require.ErrorContains(t, err, "more than the 8192 W3C Baggage allows")
}

func TestFromContext(t *testing.T) {
	_, ok, err := fit.FromContext(t.Context(), memberCodec{})
	require.NoError(t, err)
	require.False(t, ok, "no baggage carries no scenario")

	_, _, err = fit.FromContext(t.Context(), nil)
	require.ErrorContains(t, err, "no Decoder")

	bad, err := baggage.NewMemberRaw("t.delay", "p@soon")
	require.NoError(t, err)
	b, err := baggage.New(bad)
	require.NoError(t, err)
	_, ok, err = fit.FromContext(baggage.ContextWithBaggage(t.Context(), b), memberCodec{})
	require.True(t, ok, "a member that doesn't decode is still a scenario carried")
	var de *fit.DecodeError
	require.ErrorAs(t, err, &de)
	require.Equal(t, "t.delay", de.Member)
	require.ErrorContains(t, err, `fit: baggage member "t.delay": time: invalid duration "soon"`)

	require.False(t, fit.Carries(b, nil))
}

func TestDecodeError(t *testing.T) {
	err := &fit.DecodeError{Err: context.Canceled}
	require.Equal(t, "fit: baggage: context canceled", err.Error())
	require.ErrorIs(t, err, context.Canceled)
}

func TestScenario_Expired(t *testing.T) {
	ends := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		s    fit.Scenario
		now  time.Time
		want bool
	}{
		{"no end", fit.Scenario{}, ends, false},
		{"before its end", fit.Scenario{Ends: ends}, ends.Add(-time.Nanosecond), false},
		{"at its end", fit.Scenario{Ends: ends}, ends, true},
		{"after its end", fit.Scenario{Ends: ends}, ends.Add(time.Hour), true},
		{"in another zone", fit.Scenario{Ends: ends}, ends.In(time.FixedZone("CET", 3600)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.s.Expired(tc.now))
		})
	}
}
