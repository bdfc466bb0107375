package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/lease"
)

// electorOn returns an Elector of the memcached controller's Lease, as
// identity, reaching the Leases through leases, with these timings.
func electorOn(t *testing.T, leases coordinationv1client.LeasesGetter, identity string, leaseDuration, renewDeadline, retryPeriod time.Duration) *lease.Elector {
	t.Helper()
	e, err := lease.New(lease.Config{
		Client:        leases,
		Name:          "memcached-controller",
		Namespace:     "memcached-system",
		Identity:      identity,
		LeaseDuration: leaseDuration,
		RenewDeadline: renewDeadline,
		RetryPeriod:   retryPeriod,
	})
	require.NoError(t, err)
	return e
}

// applyLease applies the update a, of l, to client's tracker as the API
// server would, so only a write that took counts: one of a stale
// resourceVersion is a conflict. It returns the Lease stored, its
// resourceVersion one up, or the error the API server answers.
func applyLease(client *fake.Clientset, a k8stesting.Action, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	stored, err := client.Tracker().Get(a.GetResource(), l.Namespace, l.Name)
	if err != nil {
		return nil, err
	}
	if rv := stored.(*coordinationv1.Lease).ResourceVersion; rv != l.ResourceVersion {
		return nil, apierrors.NewConflict(a.GetResource().GroupResource(), l.Name, fmt.Errorf("stale resourceVersion %q, stored %q", l.ResourceVersion, rv))
	}
	l = l.DeepCopy()
	n, _ := strconv.Atoi(l.ResourceVersion)
	l.ResourceVersion = strconv.Itoa(n + 1)
	if err := client.Tracker().Update(a.GetResource(), l, l.Namespace); err != nil {
		return nil, err
	}
	return l, nil
}

// errCut is what a replica cut off from the API server gets.
var errCut = errors.New("cut off from the API server")

// cutLeases reaches the Leases until cut is set, and nothing after: each
// request then fails at once with errCut, as one an API server refuses,
// or, when hang, waits for its context to end, as an HTTP request behind
// a network partition or to an API server that stops answering does.
type cutLeases struct {
	coordinationv1client.LeasesGetter
	cut  *atomic.Bool
	hang bool
}

func (c cutLeases) Leases(namespace string) coordinationv1client.LeaseInterface {
	return cutLease{LeaseInterface: c.LeasesGetter.Leases(namespace), cut: c.cut, hang: c.hang}
}

type cutLease struct {
	coordinationv1client.LeaseInterface
	cut  *atomic.Bool
	hang bool
}

// refused returns nil until cut, and then errCut, or, when hang, ctx's
// error once it ends.
func (c cutLease) refused(ctx context.Context) error {
	switch {
	case !c.cut.Load():
		return nil
	case c.hang:
		<-ctx.Done()
		return ctx.Err()
	default:
		return errCut
	}
}

func (c cutLease) Get(ctx context.Context, name string, opts metav1.GetOptions) (*coordinationv1.Lease, error) {
	if err := c.refused(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Get(ctx, name, opts)
}

func (c cutLease) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	if err := c.refused(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Create(ctx, l, opts)
}

func (c cutLease) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	if err := c.refused(ctx); err != nil {
		return nil, err
	}
	return c.LeaseInterface.Update(ctx, l, opts)
}
