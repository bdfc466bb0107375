package passes_test

import (
	"testing"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/benchmarks/internal/passes"
)

// TestSplit_tells_the_regions_of_a_pass_and_its_label builds a profile of
// the stacks a loam controller's samples have, innermost first, and checks
// that each lands in its region with its label.
func TestSplit_tells_the_regions_of_a_pass_and_its_label(t *testing.T) {
	const (
		loop   = "github.com/loam-dev/loam/domain/reconcile.(*Loop).Reconcile"
		next   = "github.com/loam-dev/loam/domain/reconcile.(*Loop).Next"
		body   = "github.com/loam-dev/loam/kube.resourceReconcile[...].func1"
		user   = "github.com/loam-dev/loam/benchmarks/loamcontroller.Reconciler.Reconcile"
		decode = "github.com/loam-dev/loam/kube.decode[...]"
		apply  = "github.com/loam-dev/loam/domain/reconcile.(*Loop).applyStatus"
		ended  = "github.com/loam-dev/loam/adapters/telemetry.(*Recorder).ReconcileEnded"
		watch  = "k8s.io/client-go/tools/cache.(*Reflector).watch"
	)
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	fns := map[string]*profile.Function{}
	add := func(ns int64, label string, stack ...string) {
		s := &profile.Sample{Value: []int64{1, ns}}
		for _, name := range stack {
			if fns[name] == nil {
				fns[name] = &profile.Function{ID: uint64(len(fns) + 1), Name: name}
			}
			s.Location = append(s.Location, &profile.Location{Line: []profile.Line{{Function: fns[name]}}})
		}
		if label != "" {
			s.Label = map[string][]string{passes.PassLabel: {label}}
		}
		p.Sample = append(p.Sample, s)
	}
	add(1, passes.Second, "encoding/json.Unmarshal", decode, loop, next)
	add(10, passes.First, "net/http.(*Client).Do", user, body, loop, next)
	add(20, passes.Second, "bytes.Equal", apply, loop, next)
	add(40, passes.Second, "encoding/json.Marshal", body, loop, next)
	add(80, passes.First, ended, loop, next)
	add(100, "", "encoding/json.Unmarshal", watch)
	add(200, passes.First, "runtime.gcBgMarkWorker") // a goroutine the worker started carries its label, outside a pass

	s, total := passes.Split(p)
	require.Equal(t, int64(451), total)
	require.Equal(t, int64(1), s.Of(passes.Head, passes.Second), "decoding the object is the head, with the label of the worker's last pass")
	require.Equal(t, int64(10), s.Of(passes.Body, passes.First), "the Reconciler is the body")
	require.Equal(t, int64(40), s.Of(passes.Body, passes.Second), "so is encoding its status")
	require.Equal(t, int64(20), s.Of(passes.Tail, passes.Second), "comparing and applying the status is the tail")
	require.Equal(t, int64(80), s.Of(passes.Tail, passes.First), "so is the reconcile's telemetry at its end")
	require.Equal(t, int64(300), s.Of(passes.Outside, ""), "no pass in the stack is outside, whatever its label")
}
