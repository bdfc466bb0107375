package settings_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/settings"
)

// valid returns Settings with no mistake, for a test to break.
func valid() settings.Settings {
	s := settings.Default()
	s.Name = "memcached-controller"
	s.LeaderElection.Namespace = "memcached-system"
	s.LeaderElection.Identity = "pod-1"
	return s
}

func TestDefault(t *testing.T) {
	d := settings.Default()
	require.Equal(t, settings.Settings{
		Workers:          1,
		Resync:           10 * time.Hour,
		RetryBaseDelay:   5 * time.Millisecond,
		RetryMaxDelay:    1000 * time.Second,
		RetryRate:        10,
		RetryBurst:       100,
		ReconcileTimeout: 5 * time.Minute,
		LeaderElection:   settings.LeaderElection{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, DrainTimeout: 15 * time.Second},
	}, d)
	require.True(t, settings.Fenced(d.LeaderElection.LeaseDuration, d.LeaderElection.RenewDeadline, d.LeaderElection.RetryPeriod))
}

func TestValidate_reports_every_mistake_together(t *testing.T) {
	s := valid()
	s.Name = "Memcached_Controller"
	s.Namespace = "Team A"
	s.Workers = 0
	s.Resync = -time.Hour
	s.RetryBaseDelay = 10 * time.Second // more than RetryMaxDelay, below
	s.RetryMaxDelay = time.Second
	s.LeaderElection.Namespace = ""
	s.LeaderElection.Identity = ""
	s.LeaderElection.LeaseDuration = 10 * time.Second // not longer than RenewDeadline
	s.LeaderElection.RetryPeriod = 9 * time.Second    // 1.2 of it is longer than RenewDeadline

	err := settings.Validate(s)
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 9, err.Error())
	for i, prefix := range []string{
		"kube: Settings.Name: ",
		"kube: Settings.Namespace: ",
		"kube: Settings.Workers: is 0: want from 1 to 1000 workers",
		"kube: Settings.Resync: is -1h0m0s: want 0, for no resync, or at least 1s",
		"kube: Settings.LeaderElection.Namespace: is empty: want a namespace's name",
		"kube: Settings.LeaderElection.Identity: is empty: want this replica's own name, such as its pod's",
		"kube: Settings.RetryMaxDelay: 1s is shorter than RetryBaseDelay, 10s",
		"kube: Settings.LeaderElection.LeaseDuration: 10s is not longer than RenewDeadline, 10s",
		"kube: Settings.LeaderElection.RenewDeadline: 10s is not longer than 1.2 RetryPeriods of 9s, 10.8s",
	} {
		require.True(t, strings.HasPrefix(lines[i], prefix), "line %d: %q does not start %q", i, lines[i], prefix)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*settings.Settings)
		want   []string // every line of the error; none when valid
	}{
		{"valid", func(*settings.Settings) {}, nil},
		{"every namespace", func(s *settings.Settings) { s.Namespace = "" }, nil},
		{"one namespace", func(s *settings.Settings) { s.Namespace = "team-a" }, nil},
		{"no resync", func(s *settings.Settings) { s.Resync = 0 }, nil},
		{"a namespace set", func(s *settings.Settings) { s.Namespaces = []string{"team-a", "team-b"} }, nil},
		{"an empty namespace set is unset", func(s *settings.Settings) { s.Namespace = "team-a"; s.Namespaces = []string{} }, nil},
		{"selectors", func(s *settings.Settings) {
			s.LabelSelector, s.FieldSelector = "app.kubernetes.io/part-of in (memcached),tier!=db", "metadata.name!=default"
		}, nil},
		{"a slow, narrow retry bucket", func(s *settings.Settings) { s.RetryRate, s.RetryBurst = 0.5, 1 }, nil},
		{"failure events off", func(s *settings.Settings) { s.FailureEvents = settings.FailureEventsOff }, nil},
		{"sharded", func(s *settings.Settings) { s.Shards = 8 }, nil},
		{"one shard", func(s *settings.Settings) { s.Shards = 1 }, nil},
		{
			"shards not a power of two",
			func(s *settings.Settings) { s.Shards = 6 },
			[]string{"kube: Settings.Shards: is 6: want a power of two from 1 to 256 (or 0, for no sharding)"},
		},
		{
			"too many shards",
			func(s *settings.Settings) { s.Shards = 512 },
			[]string{"kube: Settings.Shards: is 512: want a power of two from 1 to 256 (or 0, for no sharding)"},
		},
		{
			"sharded, with an identity no Lease can be named after and a name too long for a label",
			func(s *settings.Settings) {
				s.Shards = 4
				s.Name = strings.Repeat("m", 64)
				s.LeaderElection.Identity = "Pod 0"
			},
			[]string{
				`kube: Settings.Name: "` + strings.Repeat("m", 64) + `" is 64 characters long: a sharded controller's Leases carry it as a label, which has at most 63`,
				`kube: Settings.LeaderElection.Identity: "Pod 0" names the replica's membership Lease "` + strings.Repeat("m", 64) + `-member-Pod 0", which is not a Lease's name: ` +
					`a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			},
		},
		{
			"the same identity, unsharded, is fine",
			func(s *settings.Settings) { s.LeaderElection.Identity = "Pod 0" },
			nil,
		},
		{
			"failure events neither on nor off",
			func(s *settings.Settings) { s.FailureEvents = 7 },
			[]string{"kube: Settings.FailureEvents: is FailureEvents(7): want FailureEventsOn or FailureEventsOff"},
		},
		{
			"a namespace set with a duplicate and an invalid name",
			func(s *settings.Settings) { s.Namespaces = []string{"team-a", "Team B", "team-a"} },
			[]string{`kube: Settings.Namespaces: ["team-a" "Team B" "team-a"]: [1] "Team B" is not a namespace's name: ` +
				`a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'); ` +
				`[2] "team-a" is [0] too: name each namespace once`},
		},
		{
			"a namespace set beside a namespace",
			func(s *settings.Settings) { s.Namespace = "team-a"; s.Namespaces = []string{"team-b"} },
			[]string{`kube: Settings.Namespaces: is ["team-b"], and Namespace is "team-a": set one of them`},
		},
		{
			"a namespace set too large",
			func(s *settings.Settings) {
				for i := range 101 {
					s.Namespaces = append(s.Namespaces, fmt.Sprintf("ns-%d", i))
				}
			},
			[]string{"kube: Settings.Namespaces: has 101 namespaces: want from 1 to 100"},
		},
		{
			"selectors that don't parse",
			func(s *settings.Settings) { s.LabelSelector, s.FieldSelector = "app in (", "metadata.name" },
			[]string{
				`kube: Settings.LabelSelector: "app in (" is not a label selector: unable to parse requirement: found '', expected: ',', ')' or identifier`,
				`kube: Settings.FieldSelector: "metadata.name" is not a field selector: invalid selector: 'metadata.name'; can't understand 'metadata.name'`,
			},
		},
		{
			"no retry bucket and no deadline",
			func(s *settings.Settings) { s.RetryRate, s.RetryBurst, s.ReconcileTimeout = 0, 0, -time.Second },
			[]string{
				"kube: Settings.RetryRate: is 0: want more than 0 retries a second",
				"kube: Settings.RetryBurst: is 0: want at least 1 retry",
				"kube: Settings.ReconcileTimeout: is -1s: want longer than 0s",
			},
		},
		{
			"a rate that is not a number",
			func(s *settings.Settings) { s.RetryRate = math.NaN() },
			[]string{"kube: Settings.RetryRate: is NaN: want more than 0 retries a second"},
		},
		{"retry delays equal", func(s *settings.Settings) { s.RetryBaseDelay, s.RetryMaxDelay = time.Second, time.Second }, nil},
		{
			"a bound isn't checked when one of its fields is wrong alone",
			func(s *settings.Settings) { s.RetryMaxDelay = 0; s.LeaderElection.RenewDeadline = 0 },
			[]string{
				"kube: Settings.RetryMaxDelay: is 0s: want longer than 0s",
				"kube: Settings.LeaderElection.RenewDeadline: is 0s: want longer than 0s",
			},
		},
		{
			"a bad Lease duration is reported once",
			func(s *settings.Settings) { s.LeaderElection.LeaseDuration = 0 },
			[]string{"kube: Settings.LeaderElection.LeaseDuration: is 0s: want from 1s to 2147483647 seconds, as a Lease holds it"},
		},
		{
			"a bad retry period is reported once",
			func(s *settings.Settings) { s.LeaderElection.RetryPeriod = 0 },
			[]string{"kube: Settings.LeaderElection.RetryPeriod: is 0s: want longer than 0s"},
		},
		{
			"a bad base delay is reported once",
			func(s *settings.Settings) { s.RetryBaseDelay = -time.Second },
			[]string{"kube: Settings.RetryBaseDelay: is -1s: want longer than 0s"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valid()
			tc.change(&s)
			err := settings.Validate(s)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, strings.Join(tc.want, "\n"))
		})
	}
}

func TestFailureEvents(t *testing.T) {
	require.Equal(t, settings.FailureEventsOn, settings.FailureEvents(0), "the zero value records the Events")
	require.Equal(t, settings.FailureEventsOn, settings.Default().FailureEvents)
	for _, tc := range []struct {
		text string
		want settings.FailureEvents
		err  string
	}{
		{text: "on", want: settings.FailureEventsOn},
		{text: "off", want: settings.FailureEventsOff},
		{text: "Off", err: `"Off" is neither on nor off`},
		{text: "", err: `"" is neither on nor off`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			got, err := settings.ParseFailureEvents(tc.text)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.text, got.String())
			require.NoError(t, settings.CheckFailureEvents(got))
		})
	}
}
