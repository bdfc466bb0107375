package compare

import (
	"fmt"

	"github.com/loam-dev/loam/benchmarks/internal/apimetrics"
	"github.com/loam-dev/loam/benchmarks/memcached"
)

// The kinds a run's requests are counted for.
func isMemcached(k apimetrics.Request) bool {
	return k.Group == memcached.Group && k.Resource == memcached.Plural
}

func isConfigMap(k apimetrics.Request) bool { return k.Group == "" && k.Resource == "configmaps" }

func isLease(k apimetrics.Request) bool {
	return k.Group == "coordination.k8s.io" && k.Resource == "leases"
}

// runsKind reports whether k is of a kind a run uses.
func runsKind(k apimetrics.Request) bool { return isMemcached(k) || isConfigMap(k) || isLease(k) }

// isObjectWrite reports whether k is a write a reconcile makes: to a
// ConfigMap, or to a Memcached or its status, but not the harness's own
// creates of Memcacheds.
func isObjectWrite(k apimetrics.Request) bool {
	switch {
	case isConfigMap(k):
		return apimetrics.IsWrite(k.Verb)
	case isMemcached(k):
		return apimetrics.IsWrite(k.Verb) && k.Verb != "POST"
	}
	return false
}

// Writes is the number of writes the run's reconciles made (the limit's
// applies in the limit), as the API server counted them.
func (r Result) Writes() float64 { return r.Requests.Sum(isObjectWrite) }

// Conflicts is the number of requests on Memcacheds and ConfigMaps the API
// server answered with 409 Conflict.
func (r Result) Conflicts() float64 {
	return r.Requests.Sum(func(k apimetrics.Request) bool {
		return k.Code == "409" && (isMemcached(k) || isConfigMap(k))
	})
}

// LeaseWrites is the number of writes to Leases in the run: the
// controller's renewals, and the API server's of its own identity Lease,
// which its count doesn't tell apart.
func (r Result) LeaseWrites() float64 {
	return r.Requests.Sum(func(k apimetrics.Request) bool { return isLease(k) && apimetrics.IsWrite(k.Verb) })
}

// HeapPerObject is the growth of the controller's heap after garbage
// collection, from before its controller started until every one of the n
// objects had settled, over n: an object, its ConfigMap, and whatever the
// controller keeps of them.
func (r Result) HeapPerObject(n int) float64 {
	return (float64(r.Converged.HeapBytes) - float64(r.Started.HeapBytes)) / float64(n)
}

// summary is the run's line in the harness's log.
func (r Result) summary(n int) string {
	s := fmt.Sprintf("%s, repeat %d: %d objects settled in %.2f s, %.2f writes/object, API server CPU %.2f s",
		r.Mode, r.Repeat, n, r.Convergence.Seconds(), r.Writes()/float64(n), r.HarnessCPU.Seconds())
	if r.Mode.controller() {
		s += fmt.Sprintf("; controller CPU %.2f s, heap %.0f B/object, peak RSS %.1f MiB, %.2f reconciles/object (%.0f in its /metrics)",
			r.ControllerCPU.Seconds(), r.HeapPerObject(n), float64(r.PeakRSS)/(1<<20), float64(r.Converged.Reconciles)/float64(n), r.ScrapedReconciles)
	}
	if r.Restart != nil {
		s += r.Restart.summary(n)
	}
	return s + fmt.Sprintf("; %d Memcacheds, ConfigMaps and Leases left after cleanup", r.Left)
}
