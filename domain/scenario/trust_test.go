package scenario_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/domain/scenario"
)

// member is the Decoder's member in these tests.
const member = "acme.fault"

// mustParse returns the baggage value holds.
func mustParse(t *testing.T, value string) baggage.Baggage {
	t.Helper()
	b, err := baggage.Parse(value)
	require.NoError(t, err)
	return b
}

func TestDecide_reads_an_annotation_one_of_four_ways(t *testing.T) {
	scenarioValue := member + "={%22rules%22:[]}"
	errNotBaggage := errors.New("not baggage")
	errCopy := errors.New("the cached object isn't JSON")
	// parse stands in for the App's Decoder: it fails on errNotBaggage's
	// value, and keeps only member.
	parse := func(value string) (baggage.Baggage, error) {
		if value == "not baggage" {
			return baggage.Baggage{}, errNotBaggage
		}
		b, err := baggage.Parse(value)
		if err != nil {
			return baggage.Baggage{}, err
		}
		m := b.Member(member)
		if m.Key() == "" {
			return baggage.Baggage{}, nil
		}
		return baggage.New(m)
	}
	for _, tc := range []struct {
		name     string
		value    string
		trusted  bool
		trustErr error
		// parsed and asked say whether parse and trust are called.
		parsed, asked bool
		want          scenario.Outcome
	}{
		{name: "no annotation", value: "", want: scenario.Outcome{Verdict: scenario.Absent}},
		{name: "none of the Decoder's members", value: "team=cache,userId=alice", trusted: true, parsed: true,
			want: scenario.Outcome{Verdict: scenario.Absent}},
		{name: "a value parse can't read", value: "not baggage", trusted: true, parsed: true,
			want: scenario.Outcome{Verdict: scenario.Unreadable, Err: errNotBaggage}},
		{name: "an object that can't be handed to trust", value: scenarioValue, trustErr: errCopy, parsed: true, asked: true,
			want: scenario.Outcome{Verdict: scenario.Unreadable, Err: errCopy}},
		{name: "an object trust doesn't trust", value: scenarioValue, parsed: true, asked: true,
			want: scenario.Outcome{Verdict: scenario.Untrusted}},
		{name: "a trusted object", value: scenarioValue, trusted: true, parsed: true, asked: true,
			want: scenario.Outcome{Verdict: scenario.Trusted, Scenario: mustParse(t, scenarioValue)}},
		{name: "a trusted object, other members dropped", value: "team=cache," + scenarioValue, trusted: true, parsed: true, asked: true,
			want: scenario.Outcome{Verdict: scenario.Trusted, Scenario: mustParse(t, scenarioValue)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parsed, asked bool
			got := scenario.Decide(tc.value,
				func(value string) (baggage.Baggage, error) {
					parsed = true
					require.Equal(t, tc.value, value)
					return parse(value)
				},
				func() (bool, error) {
					asked = true
					return tc.trusted, tc.trustErr
				})
			require.Equal(t, tc.want.Verdict, got.Verdict)
			require.Equal(t, tc.want.Err, got.Err)
			require.Equal(t, tc.want.Scenario.String(), got.Scenario.String())
			require.Equal(t, tc.parsed, parsed, "parse called")
			require.Equal(t, tc.asked, asked, "trust asked")
		})
	}
}

func TestDecide_leaves_a_panic_in_trust_to_its_caller(t *testing.T) {
	parse := func(string) (baggage.Baggage, error) { return baggage.Parse(member + "=x") }
	require.PanicsWithValue(t, "a bug in trust", func() {
		scenario.Decide(member+"=x", parse, func() (bool, error) { panic("a bug in trust") })
	})
}

func TestJoin_sets_the_scenario_s_members_and_keeps_every_other(t *testing.T) {
	for _, tc := range []struct {
		name       string
		b, s, want string
	}{
		{"into empty baggage", "", member + "=new", member + "=new"},
		{"beside other members", "region=eu", member + "=new", "region=eu," + member + "=new"},
		{"replacing a member of the same key", member + "=old,region=eu", member + "=new", "region=eu," + member + "=new"},
		{"an empty scenario", "region=eu", "", "region=eu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scenario.Join(mustParse(t, tc.b), mustParse(t, tc.s))
			want := mustParse(t, tc.want)
			require.Equal(t, want.Len(), got.Len(), got.String())
			for _, m := range want.Members() {
				require.Equal(t, m.Value(), got.Member(m.Key()).Value(), m.Key())
			}
		})
	}
}

func TestVerdict_String_names_each_verdict(t *testing.T) {
	for v, want := range map[scenario.Verdict]string{
		scenario.Absent: "Absent", scenario.Unreadable: "Unreadable", scenario.Untrusted: "Untrusted", scenario.Trusted: "Trusted",
		scenario.Verdict(7): "Verdict(7)",
	} {
		require.Equal(t, want, v.String())
	}
}
