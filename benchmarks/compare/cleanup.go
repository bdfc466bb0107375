package compare

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/benchmarks/memcached"
)

// cleanupTimeout bounds deleting a run's n objects and waiting until they
// are gone: five minutes, and a minute more for every 5,000 objects, which
// the API server deletes one at a time.
func cleanupTimeout(n int) time.Duration {
	return 5*time.Minute + time.Duration(n/5000)*time.Minute
}

// cleanup deletes the Memcacheds, ConfigMaps and Leases of ns and waits
// until they are gone, so that the next run meets the store this one
// met. kubetest runs no garbage collector, which would delete the
// ConfigMaps with their owners, and no namespace controller, which would
// empty a deleted namespace: the namespace itself stays, empty. A delete
// that outlives the API server's request timeout, as one of tens of
// thousands of objects may, is sent again until they are gone.
func (h *harness) cleanup(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout(h.cfg.N))
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deleting := true; ; {
		if deleting {
			err := h.deleteAll(ctx, ns)
			switch {
			case err == nil:
				deleting = false
			case !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err):
				return fmt.Errorf("delete the objects of %s: %w", ns, err)
			}
		}
		n, err := h.count(ctx, ns, 1)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the objects of %s are not gone: %w", ns, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// deleteAll deletes the Memcacheds, ConfigMaps and Leases of ns.
func (h *harness) deleteAll(ctx context.Context, ns string) error {
	all := metav1.ListOptions{}
	return errors.Join(
		h.memcacheds.Delete().Namespace(ns).Resource(memcached.Plural).Do(ctx).Error(),
		h.kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		h.kube.CoordinationV1().Leases(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
	)
}

// left returns how many Memcacheds, ConfigMaps and Leases the whole
// cluster stores.
func (h *harness) left(ctx context.Context) (int, error) {
	return h.count(ctx, metav1.NamespaceAll, 0)
}

// count returns how many Memcacheds, ConfigMaps and Leases ns holds, or
// the cluster does for metav1.NamespaceAll. With a positive limit it
// lists that many of each at most, and then tells only whether there are
// any.
func (h *harness) count(ctx context.Context, ns string, limit int64) (int, error) {
	opts := metav1.ListOptions{Limit: limit}
	var ms memcached.MemcachedList
	err := h.memcacheds.Get().Namespace(ns).Resource(memcached.Plural).
		VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Into(&ms)
	if err != nil {
		return 0, fmt.Errorf("list the Memcacheds of %q: %w", ns, err)
	}
	cms, err := h.kube.CoreV1().ConfigMaps(ns).List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("list the ConfigMaps of %q: %w", ns, err)
	}
	leases, err := h.kube.CoordinationV1().Leases(ns).List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("list the Leases of %q: %w", ns, err)
	}
	return len(ms.Items) + len(cms.Items) + len(leases.Items), nil
}
