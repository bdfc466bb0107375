package lease_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRun_keeps_renewing_while_a_hand_off_drains: the hand-off that
// domain/controller runs (handoff.go) relies on client-go renewing the
// Lease while onStarted, done leading, drains work longer than
// LeaseDuration with the Elector's context alive: a standby campaigning
// all along never takes the Lease, its renewTime moves on, and once the
// context ends the Lease is released and the standby takes it.
func TestRun_keeps_renewing_while_a_hand_off_drains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		ctx, release := context.WithCancel(t.Context())
		defer release()
		drained := make(chan struct{})
		a := campaign(ctx, newElector(t, client, "a"), func(context.Context) {
			// The drain: longer than the Lease, with the context alive.
			time.Sleep(3 * leaseDuration)
			close(drained)
		})
		<-a.leading
		b := campaign(t.Context(), newElector(t, client, "b"), untilDone)

		renewed := func() time.Time {
			l, err := client.CoordinationV1().Leases("memcached-system").Get(context.Background(), "memcached-controller", metav1.GetOptions{})
			require.NoError(t, err)
			return l.Spec.RenewTime.Time
		}
		first := renewed()
		<-drained
		synctest.Wait()
		require.Equal(t, "a", holder(t, client), "the standby took the Lease while the drain ran")
		require.Greater(t, renewed().Sub(first), 2*leaseDuration, "the Lease was not renewed during the drain")

		release()
		<-a.done
		select {
		case <-b.leading:
		case <-time.After(leaseDuration):
			t.Fatal("the standby never took the released Lease")
		}
		require.Equal(t, "b", holder(t, client))
	})
}
