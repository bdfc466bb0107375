// Package passes splits a CPU profile of the comparison's loam controller
// by reconcile pass: how much of the controller's CPU went to the passes
// over objects that were not settled yet (the first pass, which applies
// the ConfigMap and returns the status) and how much to the passes over
// settled ones (the second pass, which follows the controller's own
// status apply, and any later one), and how much to everything else: the
// informers' decoding of watch events, the HTTP transport, the garbage
// collector.
//
// The loam controller's Reconciler, when the harness profiles it, labels
// its goroutine with PassLabel as it starts ("first" or "second", by
// whether the object is settled), and the label stays until its worker's
// next pass reaches the Reconciler. So a sample's label is its pass's
// from the Reconciler on — the Reconciler, the status's encoding and
// comparison and apply, the settling of the key — but the part of a pass
// before the Reconciler (reading the cache, deciding the step, starting
// the reconcile's telemetry, decoding the object into the Reconciler's
// type) carries the label of the worker's previous pass. Split counts
// that part apart, as the head, by its label; the passes' kinds follow
// one another in no order, so the head's label is its pass's kind only
// on average.
//
// The regions are told apart by the functions in a sample's stack, which
// are loam's own: a sample is in a pass when its stack holds
// domain/reconcile's (*Loop).Reconcile, in its body from kube's
// resourceReconcile (the Reconciler, and encoding the status it
// returned), in its tail from the Loop's applyStatus, settle and
// recordEvent and the Recorder's ReconcileEnded, and in its head
// otherwise.
package passes

import (
	"strings"

	"github.com/google/pprof/profile"

	"github.com/loam-dev/loam/benchmarks/internal/probe"
)

// The profile label the loam controller's Reconciler sets on its
// goroutine, and its values. They are package probe's, which the
// controller links, so that it never links this package's profile parser.
const (
	PassLabel = probe.PassLabel
	First     = probe.FirstPass
	Second    = probe.SecondPass
)

// Region is where in a pass a sample was taken.
type Region int

// The regions.
const (
	// Outside is no pass: informers, the transport, the collector.
	Outside Region = iota
	// Head is a pass before the Reconciler: the cache's read, the step's
	// decision, the decoding of the object.
	Head
	// Body is the Reconciler, and the encoding of the status it returns.
	Body
	// Tail is after the Reconciler: the status's comparison and apply,
	// the key's settling, the reconcile's telemetry.
	Tail
)

// Share is CPU time, in nanoseconds, by region and by PassLabel's value
// ("" for a sample with none).
type Share map[Region]map[string]int64

// Split returns the CPU time of p by region and label, and p's whole CPU
// time. p is a CPU profile: its sample values are [samples, cpu
// nanoseconds].
func Split(p *profile.Profile) (Share, int64) {
	s := Share{}
	var total int64
	cpu := len(p.SampleType) - 1
	for _, smp := range p.Sample {
		ns := smp.Value[cpu]
		total += ns
		r := regionOf(smp)
		label := ""
		if r != Outside {
			if ls := smp.Label[PassLabel]; len(ls) > 0 {
				label = ls[0]
			}
		}
		if s[r] == nil {
			s[r] = map[string]int64{}
		}
		s[r][label] += ns
	}
	return s, total
}

// Of is the CPU time of region r with label.
func (s Share) Of(r Region, label string) int64 { return s[r][label] }

// regionOf tells the region of smp from its stack, innermost first.
func regionOf(smp *profile.Sample) Region {
	region, inPass := Head, false
	for _, loc := range smp.Location {
		for _, line := range loc.Line {
			if line.Function == nil {
				continue
			}
			name := line.Function.Name
			switch {
			case strings.Contains(name, "/domain/reconcile.(*Loop).Reconcile"):
				inPass = true
			case region != Head:
			case strings.Contains(name, "/kube.resourceReconcile["):
				region = Body
			case strings.Contains(name, "/domain/reconcile.(*Loop).applyStatus"),
				strings.Contains(name, "/domain/reconcile.(*Loop).settle"),
				strings.Contains(name, "/domain/reconcile.(*Loop).recordEvent"),
				strings.HasSuffix(name, ".ReconcileEnded"):
				region = Tail
			}
		}
	}
	if !inPass {
		return Outside
	}
	return region
}
