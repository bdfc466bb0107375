//go:debug randseednop=0

package lease_test

import (
	"context"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/domain/settings"
)

// TestFence_takeover_bounds: a leader is cut off from the API server, or
// releases its Lease, at many moments between its renewals, and a standby
// takes the Lease over. On synctest's clock, where requests take no time,
// with client-go's own elector and its jitter seeded (the
// //go:debug randseednop=0 above lets rand.Seed seed it, so each run is the
// same every time), every run keeps settings' bounds exactly:
//
//   - the standby takes a kept Lease no sooner than LeaseSeconds after the
//     first renewal of the last one's second, so no sooner than Takeover's
//     earliest after the last renewal, and before its latest;
//   - the cut-off leader, refused by the API server, stops leading exactly
//     the sooner of LeaderStops (client-go gives up) and FenceAfter (the
//     Elector's fence) after its last renewal, so the standby takes over
//     at least Takeover's earliest less that after;
//   - a released Lease is taken before TakeoverReleased.
//
// No run lets the standby take the Lease while the old leader still leads,
// not even at timings settings.Fenced finds unfenced (client-go alone, at
// 2.9 s, 2 s, 0.5 s, let a seeded run overlap by up to a second): the
// fence stops the leader a RetryPeriod before the earliest takeover.
func TestFence_takeover_bounds(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		leaseDuration, renewDeadline, retryPeriod time.Duration
	}{
		{"Kubernetes' defaults", 15 * time.Second, 10 * time.Second, 2 * time.Second},
		{"the chaos tests'", 4 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{"3s, 2s, 0.5s: no margin", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{"2.9s counts 2s", 2900 * time.Millisecond, 2 * time.Second, 500 * time.Millisecond},
		{"15.9s counts 15s", 15900 * time.Millisecond, 14 * time.Second, 1500 * time.Millisecond},
		{"renewals 0.3s apart", 3 * time.Second, 1900 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			earliest, latest := settings.Takeover(tc.leaseDuration, tc.retryPeriod)
			stops := min(settings.LeaderStops(tc.renewDeadline, tc.retryPeriod), settings.FenceAfter(tc.leaseDuration, tc.retryPeriod))
			margin := earliest - stops
			whole := settings.LeaseSeconds(tc.leaseDuration)
			// The cuts spread over 3s: renewals 0.3s or 0.5s apart fall
			// on every place in a second within it.
			const runs, spread = 30, 3 * time.Second
			var sinceLast, sinceStop, released []time.Duration
			overlapped := 0
			for i := range runs {
				// Each run cuts the leader off at a phase of its own, off the
				// instants of its renewals, and seeds the jitter.
				phase := (2*time.Duration(i) + 1) * spread / (2 * runs)
				synctest.Test(t, func(t *testing.T) {
					rand.Seed(int64(i + 1)) //nolint:staticcheck // client-go's jitter draws from math/rand's global source; seeding it makes the run repeatable.
					r := fenceRun(t, tc.leaseDuration, tc.renewDeadline, tc.retryPeriod, phase, true)
					require.GreaterOrEqual(t, r.acquired.Sub(r.firstOfSecond), whole,
						"run %d: taken %v after the first renewal of the last one's second, before the Lease's whole seconds", i, r.acquired.Sub(r.firstOfSecond))
					require.GreaterOrEqual(t, r.acquired.Sub(r.last), earliest, "run %d: taken before the earliest takeover", i)
					require.Less(t, r.acquired.Sub(r.last), latest, "run %d: taken at or after the latest takeover", i)
					require.Equal(t, stops, r.stopped.Sub(r.last), "run %d: the cut-off leader stops the sooner of RetryPeriod + RenewDeadline and FenceAfter after its last renewal", i)
					require.GreaterOrEqual(t, r.acquired.Sub(r.stopped), margin, "run %d: taken less than the fence's margin after the old leader stopped", i)
					sinceLast, sinceStop = append(sinceLast, r.acquired.Sub(r.last)), append(sinceStop, r.acquired.Sub(r.stopped))
					if r.acquired.Before(r.stopped) {
						overlapped++
					}
				})
				synctest.Test(t, func(t *testing.T) {
					rand.Seed(int64(i + 1)) //nolint:staticcheck // as above
					r := fenceRun(t, tc.leaseDuration, tc.renewDeadline, tc.retryPeriod, phase, false)
					took := r.acquired.Sub(r.released)
					require.GreaterOrEqual(t, took, time.Duration(0), "run %d: a released Lease taken before its release", i)
					require.Less(t, took, settings.TakeoverReleased(tc.retryPeriod), "run %d: a released Lease taken at or after 2.2 RetryPeriods", i)
					released = append(released, took)
				})
			}
			t.Logf("timings %v/%v/%v, margin %v: last renewal to takeover %v to %v, bound [%v, %v); old leader's stop to takeover %v to %v; release to takeover %v to %v; overlaps %d of %d",
				tc.leaseDuration, tc.renewDeadline, tc.retryPeriod, margin, minOf(sinceLast), maxOf(sinceLast), earliest, latest,
				minOf(sinceStop), maxOf(sinceStop), minOf(released), maxOf(released), overlapped, runs)
			require.Zero(t, overlapped, "the standby took the Lease while the cut-off leader still led")
		})
	}
}

// fenced is what one run of fenceRun saw, on synctest's clock.
type fenced struct {
	// last is the leader's last renewal that took, and firstOfSecond its
	// first renewal stamped in the same whole second.
	last, firstOfSecond time.Time
	// stopped is when the cut-off leader's leadership ended.
	stopped time.Time
	// released is when the leader's release took.
	released time.Time
	// acquired is when the standby's take of the Lease took.
	acquired time.Time
}

// fenceRun runs a leader, pod-a, and a standby, pod-b, with the Lease's
// timings; a LeaseDuration and phase after pod-a first leads, it cuts
// pod-a off from the API server, when cut, or ends its campaign, so it
// releases the Lease. It returns once pod-b has taken the Lease.
func fenceRun(t *testing.T, leaseDuration, renewDeadline, retryPeriod, phase time.Duration, cut bool) fenced {
	t.Helper()
	// NewClientset's field management takes a tracker many times as long
	// to build as a run takes, and a Lease's updates don't need it.
	client := fake.NewSimpleClientset()
	var (
		mu     sync.Mutex
		seen   fenced
		second time.Time
	)
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		l, err := applyLease(client, a, l)
		if err != nil {
			return true, nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		switch holder := ptr.Deref(l.Spec.HolderIdentity, ""); {
		case holder == "pod-b" && seen.acquired.IsZero():
			seen.acquired = time.Now()
		case holder == "pod-a":
			seen.last = time.Now()
			// The second a standby compares, as client-go's JSON of the
			// record has it.
			if stamped := l.Spec.RenewTime.Truncate(time.Second); !stamped.Equal(second) {
				second, seen.firstOfSecond = stamped, seen.last
			}
		case holder == "" && seen.released.IsZero():
			seen.released = time.Now()
		}
		return true, l, nil
	})
	var partitioned atomic.Bool
	elector := func(identity string, leases coordinationv1client.LeasesGetter) *lease.Elector {
		return electorOn(t, leases, identity, leaseDuration, renewDeadline, retryPeriod)
	}
	var stopped atomic.Pointer[time.Time]
	// client-go's election logs every failed try, through the logger of
	// the context it runs with: nothing to read here.
	quiet := klog.NewContext(t.Context(), logr.Discard())
	ctxA, stopA := context.WithCancel(quiet)
	defer stopA()
	a := campaign(ctxA, elector("pod-a", cutLeases{LeasesGetter: client.CoordinationV1(), cut: &partitioned}), func(leading context.Context) {
		<-leading.Done()
		now := time.Now()
		stopped.Store(&now)
	})
	<-a.leading
	ctxB, stopB := context.WithCancel(quiet)
	b := campaign(ctxB, elector("pod-b", client.CoordinationV1()), untilDone)

	time.Sleep(leaseDuration + phase)
	if cut {
		partitioned.Store(true)
	} else {
		stopA()
	}
	<-b.leading
	stopB()
	<-a.done
	<-b.done
	require.NotNil(t, stopped.Load(), "pod-a led")
	mu.Lock()
	defer mu.Unlock()
	seen.stopped = *stopped.Load()
	require.False(t, seen.last.IsZero(), "pod-a renewed")
	if !cut {
		require.False(t, seen.released.IsZero(), "pod-a released the Lease")
	}
	return seen
}
