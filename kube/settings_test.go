package kube

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/loam-dev/loam/domain/backoff"
	"github.com/loam-dev/loam/domain/settings"
	"github.com/loam-dev/loam/ports"
)

func TestDefaultSettings(t *testing.T) {
	d := DefaultSettings()
	require.Equal(t, Settings{
		Workers:          1,
		Resync:           10 * time.Hour,
		RetryBaseDelay:   5 * time.Millisecond,
		RetryMaxDelay:    1000 * time.Second,
		RetryRate:        10,
		RetryBurst:       100,
		ReconcileTimeout: 5 * time.Minute,
		LeaderElection:   LeaderElection{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, DrainTimeout: 15 * time.Second},
	}, d)

	// The fields with no default are the only mistakes in the defaults.
	require.EqualError(t, settings.Validate(d), strings.Join([]string{
		"kube: Settings.Name: is empty: want the controller's name, such as memcached-controller",
		"kube: Settings.LeaderElection.Namespace: is empty: want a namespace's name",
		"kube: Settings.LeaderElection.Identity: is empty: want this replica's own name, such as its pod's",
	}, "\n"))

	d.Name, d.LeaderElection.Namespace, d.LeaderElection.Identity = "memcached-controller", "memcached-system", "memcached-controller-7d9f8b-x2x4z"
	require.NoError(t, settings.Validate(d))
}

// TestDefaultSettings_backoff_is_client_gos checks the retry defaults and
// the domain's backoff against client-go's DefaultTypedControllerRateLimiter,
// which the spec names as their origin.
func TestDefaultSettings_backoff_is_client_gos(t *testing.T) {
	d := DefaultSettings()
	p := backoff.Default()
	require.Equal(t, d.RetryBaseDelay, p.BaseDelay)
	require.Equal(t, d.RetryMaxDelay, p.MaxDelay)
	require.Equal(t, p, backoff.Of(d))

	theirs := workqueue.NewTypedItemExponentialFailureRateLimiter[string](d.RetryBaseDelay, d.RetryMaxDelay)
	for failures := range 40 {
		require.Equal(t, theirs.When("key"), p.Exponential(failures), "after %d failures", failures)
	}

	// The bucket against golang.org/x/time/rate's, which client-go's uses,
	// over a random walk of bursts and pauses.
	t0 := time.Unix(1_000_000, 0)
	limiter := rate.NewLimiter(rate.Limit(p.Rate), p.Burst)
	ours := backoff.NewBucket(p.Rate, p.Burst, t0)
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	var waited, free int
	for i := range 5000 {
		// Pauses refill a token per reservation on average, so the walk
		// both empties the bucket and fills it again.
		if rng.IntN(4) == 0 {
			now = now.Add(time.Duration(rng.IntN(800)) * time.Millisecond)
		}
		want := limiter.ReserveN(now, 1).DelayFrom(now)
		require.InDelta(t, float64(want), float64(ours.Reserve(now)), float64(time.Microsecond), "reservation %d at %v", i, now.Sub(t0))
		if want > 0 {
			waited++
		} else {
			free++
		}
	}
	require.Positive(t, waited, "the walk never emptied the bucket")
	require.Positive(t, free, "the walk never found a token")
}

func TestChecks(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, tc := range []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"name", CheckName("memcached-controller"), ""},
		{"name with dots", CheckName("memcached.cache.example.com"), ""},
		{"name of 128 characters", CheckName(long(128)), ""},
		{"name empty", CheckName(""), "is empty: want the controller's name, such as memcached-controller"},
		{"name upper case", CheckName("Memcached"), `"Memcached" is not a Lease's name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"name too long for a field manager", CheckName(long(129)), `"` + long(129) + `" is 129 characters long: a field manager's name has at most 128`},
		{"name too long for a Lease", CheckName(long(254)), `"` + long(254) + `" is not a Lease's name: must be no more than 253 characters`},

		{"namespace", CheckNamespace("memcached-system"), ""},
		{"namespace empty", CheckNamespace(""), "is empty: want a namespace's name"},
		{"namespace with a dot", CheckNamespace("a.b"), `"a.b" is not a namespace's name: must not contain dots`},
		{"namespace upper case", CheckNamespace("Team"), `"Team" is not a namespace's name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"namespace too long", CheckNamespace(long(64)), `"` + long(64) + `" is not a namespace's name: must be no more than 63 characters`},

		{"workers 1", CheckWorkers(1), ""},
		{"workers 1000", CheckWorkers(1000), ""},
		{"workers 0", CheckWorkers(0), "is 0: want from 1 to 1000 workers"},
		{"workers negative", CheckWorkers(-3), "is -3: want from 1 to 1000 workers"},
		{"workers 1001", CheckWorkers(1001), "is 1001: want from 1 to 1000 workers"},

		{"resync 0", CheckResync(0), ""},
		{"resync 1s", CheckResync(time.Second), ""},
		{"resync 10h", CheckResync(10 * time.Hour), ""},
		{"resync below a second", CheckResync(500 * time.Millisecond), "is 500ms: want 0, for no resync, or at least 1s"},
		{"resync negative", CheckResync(-time.Second), "is -1s: want 0, for no resync, or at least 1s"},

		{"retry base delay", CheckRetryBaseDelay(time.Nanosecond), ""},
		{"retry base delay 0", CheckRetryBaseDelay(0), "is 0s: want longer than 0s"},
		{"retry base delay negative", CheckRetryBaseDelay(-time.Millisecond), "is -1ms: want longer than 0s"},
		{"retry max delay", CheckRetryMaxDelay(time.Hour), ""},
		{"retry max delay 0", CheckRetryMaxDelay(0), "is 0s: want longer than 0s"},
		{"retry rate", CheckRetryRate(0.5), ""},
		{"retry rate 0", CheckRetryRate(0), "is 0: want more than 0 retries a second"},
		{"retry rate infinite", CheckRetryRate(math.Inf(1)), "is +Inf: want more than 0 retries a second"},
		{"retry burst", CheckRetryBurst(1), ""},
		{"retry burst 0", CheckRetryBurst(0), "is 0: want at least 1 retry"},
		{"reconcile timeout", CheckReconcileTimeout(time.Second), ""},
		{"reconcile timeout 0", CheckReconcileTimeout(0), "is 0s: want longer than 0s"},

		{"namespaces", CheckNamespaces([]string{"team-a", "team-b"}), ""},
		{"namespaces none", CheckNamespaces(nil), "has 0 namespaces: want from 1 to 100"},
		{"namespaces twice", CheckNamespaces([]string{"team-a", "team-a"}), `["team-a" "team-a"]: [1] "team-a" is [0] too: name each namespace once`},
		{"namespaces empty name", CheckNamespaces([]string{""}), `[""]: [0] is empty: want a namespace's name`},
		{"label selector", CheckLabelSelector("app=memcached,tier notin (db)"), ""},
		{"label selector empty", CheckLabelSelector(""), ""},
		{"label selector bad", CheckLabelSelector("app in ("), `"app in (" is not a label selector: unable to parse requirement: found '', expected: ',', ')' or identifier`},
		{"field selector", CheckFieldSelector("metadata.name!=default"), ""},
		{"field selector bad", CheckFieldSelector("metadata.name"), `"metadata.name" is not a field selector: invalid selector: 'metadata.name'; can't understand 'metadata.name'`},

		{"identity", CheckIdentity("memcached-controller-7d9f8b-x2x4z"), ""},
		{"identity of a host and a uuid", CheckIdentity("node-1_0f8fad5b-d9cb-469f-a165-70867728950e"), ""},
		{"identity empty", CheckIdentity(""), "is empty: want this replica's own name, such as its pod's"},
		{"identity unprintable", CheckIdentity("pod\n1"), `"pod\n1" has the unprintable character U+000A at byte 3`},

		{"lease duration", CheckLeaseDuration(15 * time.Second), ""},
		{"lease duration 1s", CheckLeaseDuration(time.Second), ""},
		{"lease duration below a second", CheckLeaseDuration(999 * time.Millisecond), "is 999ms: want from 1s to 2147483647 seconds, as a Lease holds it"},
		{"lease duration 0", CheckLeaseDuration(0), "is 0s: want from 1s to 2147483647 seconds, as a Lease holds it"},
		{"lease duration past an int32 of seconds", CheckLeaseDuration((math.MaxInt32 + 1) * time.Second), "is 596523h14m8s: want from 1s to 2147483647 seconds, as a Lease holds it"},
		{"renew deadline", CheckRenewDeadline(10 * time.Second), ""},
		{"renew deadline 0", CheckRenewDeadline(0), "is 0s: want longer than 0s"},
		{"retry period", CheckRetryPeriod(2 * time.Second), ""},
		{"retry period negative", CheckRetryPeriod(-2 * time.Second), "is -2s: want longer than 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				require.NoError(t, tc.err)
				return
			}
			require.EqualError(t, tc.err, tc.want)
		})
	}
}

// valid returns Settings with no mistake, for a test to break.
func valid() Settings {
	s := DefaultSettings()
	s.Name = "memcached-controller"
	s.LeaderElection.Namespace = "memcached-system"
	s.LeaderElection.Identity = "pod-1"
	return s
}

// TestSettings_Validate_agrees_with_client_gos_leader_election checks that
// the Lease's bounds accept exactly what client-go's leader election
// accepts, so NewController reports every Lease client-go would refuse,
// and no other.
func TestSettings_Validate_agrees_with_client_gos_leader_election(t *testing.T) {
	require.InDelta(t, leaderelection.JitterFactor, settings.JitterFactor, 0)

	durations := []time.Duration{
		time.Second, 2 * time.Second, 2400 * time.Millisecond, 2400*time.Millisecond + 1, 3 * time.Second,
		10 * time.Second, 10*time.Second + 1, 12 * time.Second, 12*time.Second + 1, 15 * time.Second,
	}
	for _, lease := range durations {
		for _, renew := range durations {
			for _, retry := range durations {
				s := valid()
				s.LeaderElection.LeaseDuration, s.LeaderElection.RenewDeadline, s.LeaderElection.RetryPeriod = lease, renew, retry
				_, theirs := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
					Lock:          &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "pod-1"}},
					LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry,
					Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
				})
				ours := settings.Validate(s)
				require.Equal(t, theirs == nil, ours == nil, "%s: client-go says %v, we say %v",
					fmt.Sprintf("lease %v, renew %v, retry %v", lease, renew, retry), theirs, ours)
			}
		}
	}
}

// client-go's own parts fit the ports the controller is assembled from:
// the domain's Limiter is a rate limiter its queues take, so the two agree
// on what a retry is. (adapters/queue's Queue, client-go's work queue with
// two priorities, is a ports.Queue: its package asserts it.)
var _ workqueue.TypedRateLimiter[ports.Key] = (*backoff.Limiter[ports.Key])(nil)
