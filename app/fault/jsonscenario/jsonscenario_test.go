package jsonscenario_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

func newCodec(t testing.TB) *jsonscenario.Codec {
	t.Helper()
	c, err := jsonscenario.New("acme.fault")
	require.NoError(t, err)
	return c
}

// The value the specification prints for this scenario, byte for byte.
func TestAnnotationValue(t *testing.T) {
	codec := newCodec(t)
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}},
	}})
	require.NoError(t, err)
	require.Equal(t,
		`acme.fault={%22rules%22:[{%22point%22:%22kube:deployments.apps:patch%22%2C%22abort%22:true}]}`,
		baggage.FromContext(ctx).String())
}

func TestMarshal(t *testing.T) {
	codec := newCodec(t)
	tests := []struct {
		name string
		s    fit.Scenario
		want string
	}{
		{"no rules", fit.Scenario{}, `{"rules":[]}`},
		{"zero fault", fit.Scenario{Rules: []fit.Rule{{Point: "*"}}}, `{"rules":[{"point":"*"}]}`},
		{
			"every field",
			fit.Scenario{Rules: []fit.Rule{{
				Point: "kube:secrets:*",
				Fault: fit.Fault{Abort: true, Delay: 1500 * time.Millisecond, Percent: 12.5},
				Count: 3,
			}}},
			`{"rules":[{"point":"kube:secrets:*","abort":true,"delay":"1.5s","percent":12.5,"count":3}]}`,
		},
		{"no HTML escaping", fit.Scenario{Rules: []fit.Rule{{Point: "a<b>&c"}}}, `{"rules":[{"point":"a<b>&c"}]}`},
		{
			"an end, in UTC",
			fit.Scenario{Rules: []fit.Rule{{Point: "*", Fault: fit.Fault{Abort: true}}}, Ends: time.Date(2026, 12, 4, 6, 0, 0, 0, time.FixedZone("CET", 3600))},
			`{"rules":[{"point":"*","abort":true}],"ends":"2026-12-04T05:00:00Z"}`,
		},
		{
			"an experiment ID",
			fit.Scenario{Rules: []fit.Rule{{Point: "kube:*", Fault: fit.Fault{Abort: true}}}, ID: "game-day-7"},
			`{"rules":[{"point":"kube:*","abort":true}],"id":"game-day-7"}`,
		},
		{
			"a status with its Retry-After",
			fit.Scenario{Rules: []fit.Rule{{Point: "kube:pods:list", Fault: fit.Fault{Status: 429, RetryAfter: 2 * time.Second, Delay: time.Second}, Count: 2}}},
			`{"rules":[{"point":"kube:pods:list","delay":"1s","status":429,"retryAfter":"2s","count":2}]}`,
		},
		{
			"an end to the nanosecond",
			fit.Scenario{Rules: []fit.Rule{}, Ends: time.Date(2026, 12, 4, 5, 0, 0, 1500, time.UTC)},
			`{"rules":[],"ends":"2026-12-04T05:00:00.0000015Z"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codec.Marshal(tt.s)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(got))
		})
	}

	_, err := codec.Marshal(fit.Scenario{Rules: []fit.Rule{{Point: ""}}})
	require.ErrorContains(t, err, "point is empty")
	_, err = codec.Encode(fit.Scenario{Rules: []fit.Rule{{Point: "p", Count: -1}}})
	require.ErrorContains(t, err, "count -1 is negative")
}

func TestRoundTrip(t *testing.T) {
	codec := newCodec(t)
	scenarios := []fit.Scenario{
		{},
		{Rules: []fit.Rule{{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}}}},
		{Rules: []fit.Rule{
			{Point: "kube:secrets:get"},
			{Point: "kube:secrets:*", Fault: fit.Fault{Delay: 250 * time.Millisecond, Percent: 33.3}, Count: 2},
			{Point: "http:example.com:443", Fault: fit.Fault{Abort: true, Delay: time.Hour + time.Nanosecond, Percent: 100}},
			{Point: `quotes " commas , semicolons ; percents % spaces and ünïcödé`, Fault: fit.Fault{Abort: true}},
			{Point: "*", Count: 1},
			{Point: "kube:pods:*", Fault: fit.Fault{Status: 503, RetryAfter: time.Minute, Percent: 50}},
		}},
		{Rules: []fit.Rule{{Point: "*", Fault: fit.Fault{Abort: true}}}, Ends: time.Date(2026, 12, 4, 5, 0, 0, 123, time.UTC)},
		{Rules: []fit.Rule{{Point: "*"}}, ID: `quotes " commas , and ; spaces`, Ends: time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)},
	}
	for _, s := range scenarios {
		ctx, err := fit.ContextWithScenario(context.Background(), codec, s)
		require.NoError(t, err)

		// Through the header's text, as a propagator would carry it.
		header := baggage.FromContext(ctx).String()
		parsed, err := baggage.Parse(header)
		require.NoError(t, err, header)

		got, err := codec.Decode(parsed)
		require.NoError(t, err, header)
		require.Equal(t, s, got, header)
	}
}

func TestDecodeWithoutMember(t *testing.T) {
	codec := newCodec(t)
	other, err := baggage.NewMemberRaw("other.fault", `{"rules":[{"point":"*","abort":true}]}`)
	require.NoError(t, err)
	b, err := baggage.New(other)
	require.NoError(t, err)

	s, err := codec.Decode(b)
	require.NoError(t, err)
	require.Equal(t, fit.Scenario{}, s)

	s, err = codec.Decode(baggage.Baggage{})
	require.NoError(t, err)
	require.Equal(t, fit.Scenario{}, s)
}

func TestDecodeMalformed(t *testing.T) {
	codec := newCodec(t)
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{"empty", ``, []string{"EOF"}},
		{"not JSON", `abort everything`, []string{"invalid character"}},
		{"truncated", `{"rules":[{"point":"p"`, []string{"EOF"}},
		{"trailing data", `{"rules":[]} {}`, []string{"after top-level value"}},
		{"null", `null`, []string{`no "rules" field`}},
		{"no rules", `{}`, []string{`no "rules" field`}},
		{"rules null", `{"rules":null}`, []string{`no "rules" field`}},
		// encoding/json picks "cannot" or "unable to" at random once per
		// process so that nobody depends on its wording; match the rest.
		{"array", `[]`, []string{"unmarshal JSON array"}},
		{"unknown field", `{"rules":[],"ttl":"1m"}`, []string{`unknown object member name "ttl"`}},
		{"unknown rule field", `{"rules":[{"point":"p","abrot":true}]}`, []string{`unknown object member name "abrot"`}},
		{"field case", `{"rules":[{"Point":"p"}]}`, []string{`unknown object member name "Point"`}},
		{"duplicate field", `{"rules":[{"point":"p","point":"q"}]}`, []string{`duplicate object member name "point"`}},
		{"abort not bool", `{"rules":[{"point":"p","abort":"yes"}]}`, []string{"abort"}},
		{"delay as number", `{"rules":[{"point":"p","delay":250}]}`, []string{"delay"}},
		{"bad delay", `{"rules":[{"point":"p","delay":"soon"}]}`, []string{`rule 0: delay: time: invalid duration "soon"`}},
		{"negative delay", `{"rules":[{"point":"p","delay":"-1s"}]}`, []string{"delay -1s is negative"}},
		{"percent over 100", `{"rules":[{"point":"p","percent":150}]}`, []string{"percent 150 is not between 0 and 100"}},
		{"percent as string", `{"rules":[{"point":"p","percent":"50%"}]}`, []string{"percent"}},
		{"fractional count", `{"rules":[{"point":"p","count":1.5}]}`, []string{"count"}},
		{"negative count", `{"rules":[{"point":"p","count":-1}]}`, []string{"count -1 is negative"}},
		{"count overflow", `{"rules":[{"point":"p","count":1e40}]}`, []string{"count"}},
		{"no point", `{"rules":[{"abort":true}]}`, []string{`rule 0 (point ""): point is empty`}},
		{"star inside point", `{"rules":[{"point":"kube:*:patch"}]}`, []string{"'*' may appear only at the end"}},
		{"rule not an object", `{"rules":["kube:*"]}`, []string{"unmarshal JSON string"}},
		{"status not a number", `{"rules":[{"point":"p","status":"429"}]}`, []string{"status"}},
		{"a success status", `{"rules":[{"point":"p","status":204}]}`, []string{"status 204 is not an HTTP error status, from 400 to 599"}},
		{"status and abort", `{"rules":[{"point":"p","status":500,"abort":true}]}`, []string{"status 500 and abort are exclusive"}},
		{"bad retryAfter", `{"rules":[{"point":"p","status":429,"retryAfter":"later"}]}`, []string{`rule 0: retryAfter: time: invalid duration "later"`}},
		{"retryAfter as number", `{"rules":[{"point":"p","status":429,"retryAfter":1}]}`, []string{"retryAfter"}},
		{"retryAfter in part of a second", `{"rules":[{"point":"p","status":429,"retryAfter":"500ms"}]}`, []string{"retry-after 500ms is not whole seconds"}},
		{"retryAfter without status", `{"rules":[{"point":"p","retryAfter":"1s"}]}`, []string{"retry-after 1s has no status to answer with"}},
		{"ends not a time", `{"rules":[],"ends":"tomorrow"}`, []string{`ends "tomorrow" is not an RFC 3339 time`}},
		{"ends without a zone", `{"rules":[],"ends":"2026-12-04T05:00:00"}`, []string{`ends "2026-12-04T05:00:00" is not an RFC 3339 time`}},
		{"ends as a number", `{"rules":[],"ends":1764824400}`, []string{"ends"}},
		{"ends past 9999", `{"rules":[],"ends":"9999-12-31T23:00:00-02:00"}`, []string{"ends 10000-01-01 01:00:00 +0000 UTC is outside the years 1 to 9999"}},
		{"id not a string", `{"rules":[],"id":7}`, []string{"id"}},
		{"id with a newline", `{"rules":[],"id":"a\nb"}`, []string{`fit: id "a\nb": byte 0xa at 1 is not printable ASCII`}},
		{"id too long", `{"rules":[],"id":"` + strings.Repeat("x", 129) + `"}`, []string{"129 characters, more than 128"}},
		{"ends twice", `{"rules":[],"ends":"2026-12-04T05:00:00Z","ends":"2026-12-04T06:00:00Z"}`, []string{`duplicate object member name "ends"`}},
		{
			"a bad end beside bad rules",
			`{"rules":[{"point":""}],"ends":"soon"}`,
			[]string{`ends "soon" is not an RFC 3339 time`, `rule 0 (point ""): point is empty`},
		},
		{
			"every mistake in the rules at once",
			`{"rules":[{"point":"a","delay":"later"},{"point":"","count":-3}]}`,
			[]string{`rule 0: delay: time: invalid duration "later"`, `rule 1 (point ""): point is empty`, "count -3 is negative"},
		},
		{"invalid UTF-8", "{\"rules\":[{\"point\":\"\xff\"}]}", []string{"invalid UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := baggage.NewMemberRaw("acme.fault", tt.value)
			if err != nil {
				// Baggage can't hold the value; the bytes are still
				// checked by Unmarshal.
				_, err = codec.Unmarshal([]byte(tt.value))
				require.Error(t, err)
				for _, w := range tt.want {
					require.ErrorContains(t, err, w)
				}
				return
			}
			b, err := baggage.New(m)
			require.NoError(t, err)
			s, err := codec.Decode(b)
			require.Equal(t, fit.Scenario{}, s)
			var de *fit.DecodeError
			require.ErrorAs(t, err, &de)
			require.Equal(t, "acme.fault", de.Member)
			require.ErrorContains(t, err, `fit: baggage member "acme.fault": `)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestNew(t *testing.T) {
	for _, name := range []string{"acme.fault", "f", "A-Z_0.9!#$%&'*+^`|~"} {
		c, err := jsonscenario.New(name)
		require.NoError(t, err, name)
		require.Equal(t, name, c.Member())
		require.Equal(t, []string{name}, c.Members())
	}
	for name, want := range map[string]string{
		"":           `member name "": empty`,
		"acme fault": `character ' ' at byte 4`,
		"acme=fault": `character '=' at byte 4`,
		"acme,fault": `character ',' at byte 4`,
		"acme;fault": `character ';' at byte 4`,
		"ünï":        `character 'ü' at byte 0`,
		"a\"b":       `character '"' at byte 1`,
		"a/b":        `character '/' at byte 1`,
	} {
		_, err := jsonscenario.New(name)
		require.ErrorContains(t, err, want, name)
		require.ErrorContains(t, err, "W3C Baggage key", name)
	}
}

func TestNilCodec(t *testing.T) {
	var c *jsonscenario.Codec
	require.Empty(t, c.Member())
	require.Empty(t, c.Members())
	_, err := c.Encode(fit.Scenario{})
	require.ErrorContains(t, err, "nil Codec")
	s, err := c.Decode(baggage.Baggage{})
	require.NoError(t, err)
	require.Equal(t, fit.Scenario{}, s)
}

// FuzzUnmarshal feeds the decoder arbitrary member values: it must never
// panic, and whatever it accepts must be a valid scenario that survives a
// round trip.
func FuzzUnmarshal(f *testing.F) {
	for _, seed := range []string{
		`{"rules":[]}`,
		`{"rules":[{"point":"kube:deployments.apps:patch","abort":true}]}`,
		`{"rules":[{"point":"kube:secrets:*","abort":true,"delay":"1.5s","percent":12.5,"count":3}]}`,
		`{"rules":[{"point":"p","delay":"-1s"}]}`,
		`{"rules":[{"point":"p","count":1e40}]}`,
		`{"rules":[{"point":"p","point":"q"}]}`,
		`{"rules":[],"ends":"2026-12-04T06:00:00.5+01:00"}`,
		`{"rules":[],"id":"game-day-7"}`,
		`null`,
		``,
	} {
		f.Add(seed)
	}
	codec := newCodec(f)
	f.Fuzz(func(t *testing.T, value string) {
		s, err := codec.Unmarshal([]byte(value))
		if err != nil {
			require.Equal(t, fit.Scenario{}, s)
			return
		}
		require.NoError(t, s.Validate())
		again, err := codec.Marshal(s)
		require.NoError(t, err)
		back, err := codec.Unmarshal(again)
		require.NoError(t, err)
		require.Equal(t, s, back)
	})
}

// FuzzBaggage feeds the whole path from a baggage header's text: parsing
// the W3C baggage, then decoding its member. Neither may panic, and an
// accepted scenario's header must parse back to the same scenario.
func FuzzBaggage(f *testing.F) {
	for _, seed := range []string{
		`acme.fault={%22rules%22:[{%22point%22:%22kube:deployments.apps:patch%22%2C%22abort%22:true}]}`,
		`tenant=a,acme.fault={%22rules%22:[]};ttl=1,other=%20`,
		`acme.fault=%7B%22rules%22%3A%5B%5D%7D`,
		`acme.fault={%22rules%22:[{%22point%22:%22p%22%2C%22delay%22:%22x%22}]}`,
		`acme.fault=%ZZ`,
		`acme.fault`,
		`,,,`,
		``,
	} {
		f.Add(seed)
	}
	codec := newCodec(f)
	f.Fuzz(func(t *testing.T, header string) {
		b, err := baggage.Parse(header)
		if err != nil {
			return
		}
		s, err := codec.Decode(b)
		if err != nil {
			var de *fit.DecodeError
			require.ErrorAs(t, err, &de)
			return
		}
		if b.Member("acme.fault").Key() == "" {
			require.Equal(t, fit.Scenario{}, s)
			return
		}
		ctx, err := fit.ContextWithScenario(context.Background(), codec, s)
		if err != nil {
			// Re-encoding can grow the value past the header's limit.
			require.True(t, strings.Contains(err.Error(), "W3C Baggage allows"), err.Error())
			return
		}
		back, err := baggage.Parse(baggage.FromContext(ctx).String())
		require.NoError(t, err)
		got, err := codec.Decode(back)
		require.NoError(t, err)
		require.Equal(t, s, got)
	})
}
