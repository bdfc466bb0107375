package chaos

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
)

// takeoverBound is how long after the leader's last renewal a standby
// takes its Lease at the latest, as client-go v0.37's leaderelection
// behaves: a standby's tries are RetryPeriod to 2.2 RetryPeriods apart
// (JitterUntil with JitterFactor 1.2, sliding), so the first try to see
// the last renewal comes up to 2.2 RetryPeriods after it; the Lease is
// free the record's LeaseDurationSeconds — LeaseDuration truncated to
// whole seconds by its holder — after that try's Get returned; and the
// first try at or after that comes up to 2.2 RetryPeriods later. The
// Lease's acquireTime is stamped as that try starts. On top of this, the
// tries' own requests take time: the test adds what the standby's Lease
// requests took, measured at its proxy, and nothing else.
func takeoverBound(leaseDuration, retryPeriod time.Duration) time.Duration {
	return leaseDuration.Truncate(time.Second) + 2*time.Duration(2.2*float64(retryPeriod))
}

// releasedBound is how long after a leader released its Lease a standby
// takes it at the latest, client-go's way: a released Lease has no
// holder, so the standby's next try takes it, and tries are up to 2.2
// RetryPeriods apart. The try's own requests come on top, as for
// takeoverBound.
func releasedBound(retryPeriod time.Duration) time.Duration {
	return time.Duration(2.2 * float64(retryPeriod))
}

// wire is what a replica's Proxy saw: how many lists it made (a LIST, or
// a watch that asks for initial events), and when each of its Lease
// requests began and how long it took.
type wire struct {
	lists atomic.Int64

	mu         sync.Mutex
	leaseBegan []time.Time
	leaseTook  []time.Duration
}

// proxied returns a Connection to c, as its administrator, through a
// Proxy of the replica's own, and what the Proxy sees of its requests.
func proxied(t *testing.T, c *kubetest.Cluster) (kube.Connection, *wire) {
	t.Helper()
	w := &wire{}
	conn := c.Proxy(t, func(rw http.ResponseWriter, r *http.Request, next http.Handler) {
		if kubetest.Lists(r) {
			w.lists.Add(1)
		}
		if !strings.Contains(r.URL.Path, "/leases/") {
			next.ServeHTTP(rw, r)
			return
		}
		began := time.Now()
		next.ServeHTTP(rw, r)
		w.leased(began, time.Since(began))
	}).Connection()
	conn.Token = c.Connection().Token
	return conn, w
}

func (w *wire) leased(began time.Time, took time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leaseBegan = append(w.leaseBegan, began)
	w.leaseTook = append(w.leaseTook, took)
}

// leaseTime returns how long the Lease requests that began from from to
// to took, in all.
func (w *wire) leaseTime(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var total time.Duration
	for i, b := range w.leaseBegan {
		if !b.Before(from) && !b.After(to) {
			total += w.leaseTook[i]
		}
	}
	return total
}
