package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/lease"
	"github.com/loam-dev/loam/domain/settings"
)

// TestTakeover_bound: a leader crashes, its Lease held and no longer
// renewed, at many moments between its renewals; every time, the standby
// takes the Lease within the bound after the leader's last renewal, on
// synctest's clock, with client-go's own jitter, and no sooner than the
// whole seconds after the first renewal of the last one's second. A
// LeaseDuration that isn't whole seconds counts only its whole seconds.
func TestTakeover_bound(t *testing.T) {
	for _, tc := range []struct {
		name                                      string
		leaseDuration, renewDeadline, retryPeriod time.Duration
	}{
		{"Kubernetes' defaults", 15 * time.Second, 10 * time.Second, 2 * time.Second},
		{"the chaos tests'", 3 * time.Second, 2 * time.Second, 500 * time.Millisecond},
		{"a LeaseDuration of 3.9s counts 3s", 3900 * time.Millisecond, 2 * time.Second, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// docs/reliability.md's failover bound, as settings derives
			// it from client-go's leaderelection: the standby takes the
			// Lease before Takeover's latest after the last renewal, and
			// no sooner than LeaseSeconds after the first renewal stamped
			// in the same whole second as the last, since it compares the
			// records it reads as JSON, whose renewTime has whole seconds.
			// Requests take no time here.
			lowest := settings.LeaseSeconds(tc.leaseDuration)
			_, highest := settings.Takeover(tc.leaseDuration, tc.retryPeriod)
			var seen, sinceSecond []time.Duration
			const crashes = 30
			for i := range crashes {
				// The crash comes at a phase of its own between two
				// renewals, and the standby's tries' jitter is client-go's.
				phase := time.Duration(i) * tc.retryPeriod / crashes
				synctest.Test(t, func(t *testing.T) {
					last, first := takeover(t, tc.leaseDuration, tc.renewDeadline, tc.retryPeriod, phase)
					seen, sinceSecond = append(seen, last), append(sinceSecond, first)
				})
			}
			for i, d := range seen {
				require.LessOrEqual(t, d, highest, "crash %d: taken %v after the last renewal, past whole-second LeaseDuration + 4.4 RetryPeriods", i, d)
				require.GreaterOrEqual(t, sinceSecond[i], lowest, "crash %d: taken %v after the first renewal of the last one's second, before the whole-second LeaseDuration", i, sinceSecond[i])
			}
			t.Logf("last renewal to takeover over %d crashes: %v to %v (from the first renewal of its second: at least %v), bound [%v, %v]",
				crashes, minOf(seen), maxOf(seen), minOf(sinceSecond), lowest, highest)
			if tc.leaseDuration != lowest {
				// Half the takeovers or more come before the LeaseDuration
				// itself: only its whole seconds count.
				require.Less(t, minOf(seen), tc.leaseDuration, "no takeover came before %v", tc.leaseDuration)
			}
		})
	}
}

// takeover runs a leader and a standby with the Lease's timings, crashes
// the leader phase after it first leads and a LeaseDuration more, and
// returns how long after its last renewal the standby took the Lease, and
// how long after the first renewal whose renewTime has the same whole
// second as the last one's.
func takeover(t *testing.T, leaseDuration, renewDeadline, retryPeriod, phase time.Duration) (sinceLast, sinceSecond time.Duration) {
	t.Helper()
	client := fake.NewClientset()
	var (
		mu          sync.Mutex
		crashed     bool
		lastRenewal time.Time
		// firstOfSecond is when the first renewal stamped in lastRenewal's
		// whole second took, and second that second.
		firstOfSecond, second time.Time
		acquired              time.Time
	)
	errCrashed := errors.New("the leader crashed")
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		mu.Lock()
		defer mu.Unlock()
		if crashed && holder != "pod-b" {
			// Nothing of the crashed leader's reaches the API server, its
			// release included.
			return true, nil, errCrashed
		}
		l, err := applyLease(client, a, l)
		if err != nil {
			return true, nil, err
		}
		switch {
		case holder == "pod-b" && acquired.IsZero():
			acquired = time.Now()
		case holder == "pod-a":
			lastRenewal = time.Now()
			if stamped := l.Spec.RenewTime.Truncate(time.Second); !stamped.Equal(second) {
				second, firstOfSecond = stamped, lastRenewal
			}
		}
		return true, l, nil
	})
	elector := func(identity string) *lease.Elector {
		return electorOn(t, client.CoordinationV1(), identity, leaseDuration, renewDeadline, retryPeriod)
	}
	ctxA, crashA := context.WithCancel(t.Context())
	a := campaign(ctxA, elector("pod-a"), untilDone)
	<-a.leading
	ctxB, stopB := context.WithCancel(t.Context())
	b := campaign(ctxB, elector("pod-b"), untilDone)

	time.Sleep(leaseDuration + phase)
	mu.Lock()
	crashed = true
	mu.Unlock()
	crashA()
	<-b.leading
	stopB()
	<-a.done
	<-b.done
	mu.Lock()
	defer mu.Unlock()
	require.False(t, lastRenewal.IsZero(), "the leader renewed")
	return acquired.Sub(lastRenewal), acquired.Sub(firstOfSecond)
}

func minOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = min(m, d)
	}
	return m
}

func maxOf(ds []time.Duration) time.Duration {
	m := ds[0]
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
