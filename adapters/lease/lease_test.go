package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/adapters/lease"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

func newElector(t *testing.T, client *fake.Clientset, identity string) *lease.Elector {
	t.Helper()
	return electorOn(t, client.CoordinationV1(), identity, leaseDuration, renewDeadline, retryPeriod)
}

func holder(t *testing.T, client *fake.Clientset) string {
	t.Helper()
	l, err := client.CoordinationV1().Leases("memcached-system").Get(context.Background(), "memcached-controller", metav1.GetOptions{})
	require.NoError(t, err)
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// candidate runs an Elector in the background and reports what happens.
type candidate struct {
	leading  chan context.Context
	returned chan struct{} // onStarted returned
	stopped  chan struct{} // onStopped called
	done     chan struct{} // Run returned
}

func campaign(ctx context.Context, e *lease.Elector, lead func(ctx context.Context)) *candidate {
	c := &candidate{leading: make(chan context.Context, 1), returned: make(chan struct{}), stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		e.Run(ctx, func(leading context.Context) {
			defer close(c.returned)
			c.leading <- leading
			lead(leading)
		}, func() { close(c.stopped) })
	}()
	return c
}

func untilDone(ctx context.Context) { <-ctx.Done() }

func TestRun_leads_then_releases_the_Lease_when_ctx_ends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		ctx, cancel := context.WithCancel(t.Context())
		c := campaign(ctx, newElector(t, client, "pod-a"), untilDone)
		leading := <-c.leading
		require.Equal(t, "pod-a", holder(t, client))

		// Renewed for as long as it runs.
		time.Sleep(10 * leaseDuration)
		require.NoError(t, leading.Err())
		require.Equal(t, "pod-a", holder(t, client))

		cancel()
		<-c.done
		require.Error(t, leading.Err())
		requireClosed(t, c.returned)
		requireClosed(t, c.stopped)
		require.Empty(t, holder(t, client), "released")
	})
}

func TestRun_releases_only_after_the_leader_s_function_returned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		var returned atomic.Bool
		var releasedEarly atomic.Bool
		client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
			if ptr.Deref(l.Spec.HolderIdentity, "") == "" && !returned.Load() {
				releasedEarly.Store(true)
			}
			return false, nil, nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		c := campaign(ctx, newElector(t, client, "pod-a"), func(leading context.Context) {
			<-leading.Done()
			// Winding down takes a while.
			time.Sleep(time.Second)
			returned.Store(true)
		})
		<-c.leading
		cancel()
		<-c.done
		require.True(t, returned.Load())
		require.False(t, releasedEarly.Load())
		require.Empty(t, holder(t, client))
	})
}

func TestRun_ends_leadership_when_another_candidate_takes_the_Lease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		conflicts(client)
		c := campaign(t.Context(), newElector(t, client, "pod-a"), untilDone)
		leading := <-c.leading

		// Another replica takes the Lease.
		l, err := client.CoordinationV1().Leases("memcached-system").Get(t.Context(), "memcached-controller", metav1.GetOptions{})
		require.NoError(t, err)
		l.Spec.HolderIdentity = ptr.To("pod-b")
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
		l.Spec.LeaseDurationSeconds = ptr.To(int32(3600))
		_, err = client.CoordinationV1().Leases("memcached-system").Update(t.Context(), l, metav1.UpdateOptions{})
		require.NoError(t, err)

		start := time.Now()
		<-c.done
		require.Error(t, leading.Err())
		require.NoError(t, t.Context().Err(), "Run's ctx is alive: the Lease was lost")
		require.LessOrEqual(t, time.Since(start), renewDeadline+retryPeriod, "given up within the renew deadline")
		requireClosed(t, c.returned)
		require.Equal(t, "pod-b", holder(t, client), "a Lease it no longer holds isn't released")
	})
}

func TestRun_ends_leadership_when_renewals_fail_for_the_renew_deadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		var failing atomic.Bool
		var leaderReturned atomic.Bool
		var releaseBeforeReturn atomic.Bool
		client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
			if ptr.Deref(l.Spec.HolderIdentity, "") == "" {
				if !leaderReturned.Load() {
					releaseBeforeReturn.Store(true)
				}
				return false, nil, nil
			}
			if failing.Load() {
				return true, nil, errors.New("the API server is unwell")
			}
			return false, nil, nil
		})
		c := campaign(t.Context(), newElector(t, client, "pod-a"), func(leading context.Context) {
			<-leading.Done()
			leaderReturned.Store(true)
		})
		leading := <-c.leading
		failing.Store(true)
		<-c.done
		require.Error(t, leading.Err())
		require.NoError(t, t.Context().Err())
		require.False(t, releaseBeforeReturn.Load(), "the Lease is released only once the leader's function returned")
	})
}

func TestRun_only_one_candidate_leads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		ctxA, cancelA := context.WithCancel(t.Context())
		a := campaign(ctxA, newElector(t, client, "pod-a"), untilDone)
		<-a.leading
		ctxB, cancelB := context.WithCancel(t.Context())
		defer cancelB()
		b := campaign(ctxB, newElector(t, client, "pod-b"), untilDone)
		time.Sleep(5 * leaseDuration)
		synctest.Wait()
		require.Empty(t, b.leading, "the standby waits")
		require.Equal(t, "pod-a", holder(t, client))

		// The leader releases the Lease as it stops; the standby takes it
		// without waiting out LeaseDuration.
		cancelA()
		<-a.done
		start := time.Now()
		<-b.leading
		require.Less(t, time.Since(start), leaseDuration)
		require.Equal(t, "pod-b", holder(t, client))
		cancelB()
		<-b.done
	})
}

func TestRun_never_calls_the_leader_s_function_when_ctx_ends_first(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		// Another replica holds the Lease.
		_, err := client.CoordinationV1().Leases("memcached-system").Create(t.Context(), &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "memcached-system", Name: "memcached-controller"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To("pod-b"), LeaseDurationSeconds: ptr.To(int32(3600)),
				RenewTime: ptr.To(metav1.NewMicroTime(time.Now())),
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		c := campaign(ctx, newElector(t, client, "pod-a"), untilDone)
		<-c.done
		require.Empty(t, c.leading)
		requireClosed(t, c.stopped)
		require.Equal(t, "pod-b", holder(t, client))
	})
}

func TestNew_reports_every_mistake(t *testing.T) {
	_, err := lease.New(lease.Config{LeaseDuration: time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second})
	require.Error(t, err)
	for _, want := range []string{
		"lease: Config.Client is nil",
		"lease: Config.Name is empty",
		"lease: Config.Namespace is empty",
		"lease: Config.Identity is empty",
		"leaseDuration must be greater than renewDeadline",
		"lease: a LeaseDuration of 1s and a RetryPeriod of 1s leave a leader no time to lead: a standby may take the Lease 1s after a renewal",
	} {
		require.ErrorContains(t, err, want)
	}
}

// conflicts makes the fake refuse an update of a Lease from a stale read,
// as the API server does by its resourceVersion: the fake's tracker
// doesn't compare them.
func conflicts(client *fake.Clientset) {
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		stored, err := client.Tracker().Get(a.GetResource(), l.Namespace, l.Name)
		if err != nil {
			return false, nil, nil
		}
		if rv := stored.(*coordinationv1.Lease).ResourceVersion; rv != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), l.Name, fmt.Errorf("stale resourceVersion %q, stored %q", l.ResourceVersion, rv))
		}
		l = l.DeepCopy()
		n, _ := strconv.Atoi(l.ResourceVersion)
		l.ResourceVersion = strconv.Itoa(n + 1)
		return true, l, client.Tracker().Update(a.GetResource(), l, l.Namespace)
	})
}

func requireClosed(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	default:
		t.Fatal("not closed")
	}
}
