package compare

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/loam-dev/loam/benchmarks/internal/apimetrics"
	"github.com/loam-dev/loam/benchmarks/internal/probe"
	"github.com/loam-dev/loam/benchmarks/internal/proc"
)

// The restart's polling: how often the harness asks the fresh controller
// for its reconciles, and how long the count must stand still, at N or
// more, for the controller to be quiet. A settled object is reconciled
// once by a fresh controller, or twice when its own informer's list and
// its ConfigMap's queue it a pass apart; nothing else queues it again, so
// a count that stands still for quietFor has stopped.
const (
	restartPoll = 50 * time.Millisecond
	quietFor    = 2 * time.Second
)

// Restart is what loam's restart measured: once every object of the run
// had settled and its controller had stopped, a fresh loam controller
// started against the same stored objects, with an identity of its own,
// and ran until it had reconciled every object once more and was quiet.
// Every object is settled, so the spec wants no write of the restart: a
// settled object costs no request on any pass.
type Restart struct {
	// Resync is from the fresh controller's start (its process's exec)
	// until the harness saw its reconcile count grow for the last time, at
	// N or more.
	Resync time.Duration
	// Leader is from its start until it held the Lease.
	Leader time.Duration
	// CPU is its process's CPU time from exec until it was quiet.
	CPU time.Duration
	// PeakRSS is its process's peak resident memory once it was quiet,
	// and LeaderRSS the same once it held the Lease: its informers may
	// have listed the objects by then, as they start before it leads.
	PeakRSS, LeaderRSS uint64
	// Started and Converged are its probe's reports: its heap before its
	// controller started, and its heap and reconciles once quiet.
	Started   probe.Started
	Converged probe.Converged
	// Requests are the API server's count of the requests it served from
	// just before the start until the controller was quiet, for the kinds
	// a run uses.
	Requests apimetrics.Requests
}

// Writes is the restart's writes to the run's objects, as in
// Result.Writes: 0 when no settled object cost a write.
func (r *Restart) Writes() float64 { return r.Requests.Sum(isObjectWrite) }

// Conflicts is the restart's 409s on Memcacheds and ConfigMaps.
func (r *Restart) Conflicts() float64 {
	return Result{Requests: r.Requests}.Conflicts()
}

// HeapPerObject is the fresh controller's heap per object once quiet, as
// in Result.HeapPerObject.
func (r *Restart) HeapPerObject(n int) float64 {
	return Result{Started: r.Started, Converged: r.Converged}.HeapPerObject(n)
}

// restart starts a fresh loam controller over the settled objects of ns,
// whose own controller has stopped, and measures it until it is quiet.
func (h *harness) restart(ctx context.Context, ns string) (*Restart, error) {
	before, err := apimetrics.Read(ctx, h.kube.Discovery().RESTClient())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	c, err := h.startController(ctx, Loam, ns, "restart")
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	defer func() { _ = c.stop() }() // on the paths that fail before it is stopped
	r := &Restart{Leader: time.Since(start), Started: c.startedWith}
	if r.LeaderRSS, err = proc.PeakRSS(c.pid()); err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithTimeoutCause(ctx, h.cfg.Timeout,
		fmt.Errorf("the restarted controller was not quiet within %v", h.cfg.Timeout))
	defer cancel()
	last, err := h.awaitQuiet(runCtx, c)
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	r.Resync = last.Sub(start)
	if r.CPU, err = proc.CPU(c.pid()); err != nil {
		return nil, err
	}
	if r.PeakRSS, err = proc.PeakRSS(c.pid()); err != nil {
		return nil, err
	}
	if r.Converged, err = c.converged(ctx); err != nil {
		return nil, err
	}
	after, err := apimetrics.Read(ctx, h.kube.Discovery().RESTClient())
	if err != nil {
		return nil, err
	}
	r.Requests = after.Requests.Since(before.Requests)
	for k := range r.Requests {
		if !runsKind(k) {
			delete(r.Requests, k)
		}
	}
	if err := c.stop(); err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	return r, nil
}

// awaitQuiet polls c's reconcile count until it has reached N and then
// stood still for quietFor, and returns when the harness saw it grow for
// the last time.
func (h *harness) awaitQuiet(ctx context.Context, c *child) (time.Time, error) {
	tick := time.NewTicker(restartPoll)
	defer tick.Stop()
	var (
		seen int64
		last = time.Now()
	)
	for {
		n, err := c.count(ctx)
		if err != nil {
			return time.Time{}, err
		}
		now := time.Now()
		if n != seen {
			seen, last = n, now
		}
		if seen >= int64(h.cfg.N) && now.Sub(last) >= quietFor {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d reconciles of %d objects: %w", seen, h.cfg.N, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// summary is the restart's part of its run's line in the harness's log.
func (r *Restart) summary(n int) string {
	return fmt.Sprintf("; restart: resynced in %.2f s (Lease in %.2f s), %.2f reconciles/object, %.0f writes, %.0f 409s, controller CPU %.2f s, peak RSS %.1f MiB",
		r.Resync.Seconds(), r.Leader.Seconds(), float64(r.Converged.Reconciles)/float64(n), r.Writes(), r.Conflicts(),
		r.CPU.Seconds(), float64(r.PeakRSS)/(1<<20))
}

// restartTable is the section of the report on loam's restarts, or ""
// when no run restarted.
func (res *Results) restartTable() string {
	var b strings.Builder
	n := res.Config.N
	for _, r := range res.Runs {
		s := r.Restart
		if s == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n### loam's restart\n\n")
			b.WriteString("Once every object of a loam run had settled and its controller had stopped, a fresh loam controller started against the same stored objects, with an identity of its own, and ran until it had reconciled every object once more and its count of reconciles had stood still for " + quietFor.String() + ". Resync is from the fresh process's start until the harness saw its count grow for the last time; the Lease column is the part until it held the Lease. Its controller CPU is the process's from its start until quiet, its peak RSS its VmHWM then and at the Lease its VmHWM once it held the Lease (its informers may have listed by then), and heap per object as in the table above. Writes and 409s are the API server's count over the restart: every object was settled, so the restart should write nothing.\n\n")
			b.WriteString("| repeat | resync (s) | Lease (s) | reconciles/object | writes | 409s | controller CPU (s) | heap per object (B) | peak RSS (MiB) | peak RSS at the Lease (MiB) |\n")
			b.WriteString("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
		}
		fmt.Fprintf(&b, "| %d | %.2f | %.2f | %.2f | %s | %s | %.2f | %s | %.1f | %.1f |\n",
			r.Repeat, s.Resync.Seconds(), s.Leader.Seconds(), float64(s.Converged.Reconciles)/float64(n),
			format(s.Writes(), 0), format(s.Conflicts(), 0), s.CPU.Seconds(), format(s.HeapPerObject(n), 0),
			float64(s.PeakRSS)/(1<<20), float64(s.LeaderRSS)/(1<<20))
	}
	return b.String()
}
