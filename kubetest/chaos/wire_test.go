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

// firstLeaseEnd returns when the first Lease request that began at or
// after from ended, and false when none did.
func (w *wire) firstLeaseEnd(from time.Time) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	var end time.Time
	for i, b := range w.leaseBegan {
		if !b.Before(from) && (first.IsZero() || b.Before(first)) {
			first, end = b, b.Add(w.leaseTook[i])
		}
	}
	return end, !first.IsZero()
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
