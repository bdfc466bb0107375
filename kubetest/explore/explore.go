// Package explore explores an operator inside go test, the way Sieve and
// Acto do outside it (issue #25): it generates sequences of changes to a
// custom resource from its reflected schema, replays each against a
// kubetest cluster with the operator running, checks after each step,
// without being told, that the operator settled every object, kept the
// end user's invariants and went quiet, and checks at the end that
// deleting the objects leaves nothing behind. A failing sequence is
// shrunk to a minimal one and reported with its seed.
//
// Each step may also perturb the operator, Sieve-style, at one of its
// writes: a crash right after the operator's k-th write of the step cuts
// its network, so nothing more it sends lands, the Lease included, and a
// fresh replica takes over; a stale view holds back, from its k-th write
// on, what its watches of every resource but the explored one would tell
// it, until it has been quiet; and, with Faults.Restarts, an API server
// restart right after its k-th write takes every connection and watch
// away, and brings the server back with every object where it was; and,
// with Faults.ScenarioAnnotation, transient errors through loam's own
// failure injection answer the operator's k-th request for the step's
// object with an error, as an overloaded or unreachable API server would.
package explore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/baggage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/corpus"
	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/oracle"
	"github.com/loam-dev/loam/kubetest/internal/shrink"
	"github.com/loam-dev/loam/kubetest/wait"
)

// Build makes the operator, as its App's Init does, from the App's Setup,
// a Client of the cluster, and the namespace the exploration uses, which
// its Controllers should watch alone: each replay has a namespace of its
// own. It returns the App's Services: the operator's Controllers, and
// whatever else its Init returns that a test can run. It is called again
// for each fresh replica after a crash. A Controller with a fixed
// LeaderElection.Identity takes the crashed replica's Lease at once, as a
// restarted Pod of a StatefulSet would; with a new identity each crash
// waits out the Lease's LeaseDuration. The explorer counts a replica
// quiet only from when every Service it returns that has a
// Synced() health.Monitor, as every kube.Controller has, is healthy.
type Build func(s *app.Setup, client *kube.Client, namespace string) ([]app.Service, error)

// Settings returns kube.DefaultSettings for a Controller named name in a
// replay of namespace: watching namespace alone, with its Lease there and
// a fixed identity, so a fresh replica after a crash takes the Lease at
// once. Change what else the operator's Init would.
func Settings(name, namespace string) kube.Settings {
	s := kube.DefaultSettings()
	s.Name = name
	s.Namespace = namespace
	s.LeaderElection.Namespace = namespace
	s.LeaderElection.Identity = "explore"
	return s
}

// Invariant is something the operator promises about the cluster, which
// the explorer checks after each step, once the operator has settled.
type Invariant struct {
	// Name names it in a failure's report.
	Name string
	// Check returns an error saying what is false, reading the cluster
	// with client, in namespace.
	Check func(ctx context.Context, client dynamic.Interface, namespace string) error
}

// Config is what to explore. Resource and Build are required; the rest
// has defaults.
type Config[S, T any] struct {
	// Resource is the custom resource the explorer changes. Its CRD must
	// be installed in the cluster.
	Resource kube.Resource[S, T]
	// Build makes the operator's Controller.
	Build Build
	// Invariants are checked after each step.
	Invariants []Invariant
	// Seed picks the sequences: the same seed, the same sequences.
	Seed uint64
	// Sequences is how many sequences to replay (default 1), each of
	// Steps steps (default 8), over Objects objects (default 2), so that
	// deletes and re-creates of the same name come up.
	Sequences, Steps, Objects int
	// Duration, when set, replays sequences of Seed until it has
	// passed, however many that is, in place of Sequences.
	Duration time.Duration
	// Quiet is how long the operator must write nothing before the
	// explorer checks (default 1 s), and Settle how long a step may take
	// to settle (default 30 s).
	Quiet, Settle time.Duration
	// Corpus is the directory of kept sequences, which are replayed
	// before any other, and where Run keeps a failing one: by default
	// testdata/explore/ and the test's name, as go test -fuzz keeps its
	// inputs.
	Corpus string
	// Faults picks the kinds of fault the explorer injects: by default
	// crashes and stale views.
	Faults Faults
}

// ScenarioMember is the W3C baggage member the explorer's scenarios
// travel in: each replica of the operator runs with
// app.WithFaults and a jsonscenario codec of this member.
const ScenarioMember = "loam.explore"

// Faults picks the kinds of fault the explorer injects. The zero Faults
// injects crashes and stale views, not restarts. A kind turned off
// leaves the others where they were: the same seed gives the same
// crashes with stale views or without.
type Faults struct {
	// NoCrashes and NoStaleViews turn off the operator's crashes and its
	// stale views.
	NoCrashes, NoStaleViews bool
	// ScenarioAnnotation, when set, turns on transient errors: it is the
	// annotation the operator's kube.TrustScenario reads on the explored
	// resource, whose trust must trust the replay's namespace. A step
	// with errors sets it on the step's object to a scenario, carried in
	// ScenarioMember, that answers the k-th request of the object's
	// reconciles with an error, through loam's failure injection, and a
	// step without errors removes it. A fresh replica after a crash
	// counts the scenario's requests afresh, as a restarted process
	// does.
	ScenarioAnnotation string
	// Restarts turns on the API server's restarts. They are off by
	// default because each costs seconds, and more after it: every
	// client's watches back off while the server is away, client-go's up
	// to 30 s when restarts come often, the cluster's garbage collector's
	// included, so a step after a restart is given that much longer to
	// settle, and a search for a bug that never settles waits that much
	// longer for each failing replay.
	Restarts bool
}

// Failure is a failing sequence the explorer found, shrunk to a minimal
// one.
type Failure struct {
	// Seed and Sequence say which sequence failed: the Sequence-th of
	// Seed's, counting from 0.
	Seed     uint64
	Sequence int
	// Steps is the minimal failing sequence, each step with its fault; Of
	// how many steps the sequence had before it was shrunk.
	Steps []Step
	Of    int
	// Err is what the minimal sequence's replay found.
	Err error
	// Test is the test that found it, to replay it with go test -run.
	Test string
}

// Error prints the failure with its seed, what failed, the minimal
// sequence, a numbered step a line with its fault, and how to replay it.
func (f *Failure) Error() string {
	return fmt.Sprintf("sequence %d of seed %d fails: %v\nminimal sequence (%d of %d steps):\n  %s\nreplay: go test -run '^%s$' (Seed %d)",
		f.Sequence, f.Seed, f.Err, len(f.Steps), f.Of, strings.Join(stepLines(f.Steps), "\n  "),
		regexp.QuoteMeta(f.Test), f.Seed)
}

// Step is one step of a sequence: a change to one object, and the fault
// the explorer injects while the operator handles it.
type Step struct {
	generate.Step
	// CrashAfter crashes the operator right after its CrashAfter-th write
	// of the step, counting from 1, and starts a fresh replica; 0 crashes
	// nothing. A step in which the operator writes less never crashes.
	CrashAfter int
	// StaleFrom makes the operator's view stale from its StaleFrom-th
	// write of the step on, counting from 1: what the API server sends on
	// its watches of every resource but the explored one, that write's
	// own change included, is held back until the operator has been
	// quiet for Quiet. 0 holds nothing back. A fresh replica after a
	// crash starts with a view that isn't stale, and the step's later
	// writes count on.
	StaleFrom int
	// RestartAfter restarts the API server right after the operator's
	// RestartAfter-th write of the step has landed, counting from 1: every
	// connection and watch goes, and the server comes back on the same
	// address with every object where it was. 0 restarts nothing.
	RestartAfter int
	// FailAt answers the FailAt-th request, counting from 1, that the
	// operator's reconciles of the step's object send the API server with
	// FailWith, through loam's failure injection; the requests before
	// and after it go through. 0 fails nothing. Each try client-go sends
	// counts, reads through the operator's clients included, and so do
	// the writes of the controller's own, its finalizer and status.
	FailAt int
	// FailWith is the HTTP status FailAt's request is answered with, or
	// 0 for a request that fails as if the API server were unreachable.
	FailWith int
}

// String says what the step changes, and its fault.
func (s Step) String() string {
	out := s.Step.String()
	if s.StaleFrom > 0 {
		out += fmt.Sprintf(", the operator's view stale from its write %d", s.StaleFrom)
	}
	if s.CrashAfter > 0 {
		out += fmt.Sprintf(", crashing the operator right after its write %d", s.CrashAfter)
	}
	if s.RestartAfter > 0 {
		out += fmt.Sprintf(", restarting the API server right after the operator's write %d", s.RestartAfter)
	}
	if s.FailAt > 0 {
		how := "as if the API server were unreachable"
		if s.FailWith != 0 {
			how = fmt.Sprintf("with %d", s.FailWith)
		}
		out += fmt.Sprintf(", failing the operator's request %d for it %s", s.FailAt, how)
	}
	return out
}

// Run explores cfg's operator on c, and fails t with the Failure Find
// returns, or with what is wrong with cfg.
//
// Run keeps a failing sequence in cfg's Corpus, so that every later run
// replays it first, as go test -fuzz keeps a failing input: commit the
// file with the fix.
func Run[S, T any](t *testing.T, c *kubetest.Cluster, cfg Config[S, T]) {
	t.Helper()
	f, err := Find(t, c, cfg)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if f == nil {
		return
	}
	path, err := corpus.Write(cmp.Or(cfg.Corpus, corpus.Dir(t)), corpus.Kept{Seed: f.Seed, Sequence: f.Sequence}, f.Error())
	if err != nil {
		t.Fatalf("explore: %v\nkeeping it failed: %v", f, err)
	}
	t.Fatalf("explore: %v\nkept in %s", f, path)
}

// Find replays the sequences kept in cfg's Corpus, then cfg's Sequences
// sequences from Seed (or as many as Duration allows) on c, and returns
// the first that fails, shrunk by replaying shorter ones, or nil when
// none does. It returns an error, naming every mistake, when cfg is
// wrong: a Resource with no CRD, no spec or no status that records an
// observed generation, no Build, a negative count or duration, a kept
// sequence that doesn't read. c should run the garbage collector
// (kubetest.WithControllerManager), or children owned by deleted objects
// are reported as left behind.
func Find[S, T any](t *testing.T, c *kubetest.Cluster, cfg Config[S, T]) (*Failure, error) {
	t.Helper()
	e, err := newExplorer(c, cfg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	kept, err := corpus.Read(cmp.Or(cfg.Corpus, corpus.Dir(t)))
	if err != nil {
		return nil, err
	}
	for _, k := range kept {
		steps, err := e.sequence(k.Seed, k.Sequence)
		if err != nil {
			return nil, err
		}
		if f := e.try(t, k, steps); f != nil {
			return f, nil
		}
	}
	g := generate.New(cfg.Seed)
	began := time.Now()
	n := 0
	for ; cfg.Duration > 0 && time.Since(began) < cfg.Duration || cfg.Duration == 0 && n < e.sequences; n++ {
		changes, err := g.Steps(e.specSchema, e.names, e.steps)
		if err != nil {
			return nil, fmt.Errorf("sequence %d of seed %d: %w", n, cfg.Seed, err)
		}
		if f := e.try(t, corpus.Kept{Seed: cfg.Seed, Sequence: n}, schedule(cfg.Seed, n, changes, e.faults)); f != nil {
			return f, nil
		}
	}
	t.Logf("explore: %d kept sequences and %d of seed %d, of %d steps, clean, through %d crashes, %d stale views, %d API server restarts (%v of restarting) and %d failed requests in %v",
		len(kept), n, cfg.Seed, e.steps, e.crashes, e.stale, e.server.count(), e.server.spent().Round(100*time.Millisecond), e.failed, time.Since(start).Round(time.Second))
	return nil, nil
}

// sequence returns the n-th sequence of seed, with its faults.
func (e *explorer) sequence(seed uint64, n int) ([]Step, error) {
	g := generate.New(seed)
	for i := 0; ; i++ {
		changes, err := g.Steps(e.specSchema, e.names, e.steps)
		if err != nil {
			return nil, fmt.Errorf("sequence %d of seed %d: %w", i, seed, err)
		}
		if i == n {
			return schedule(seed, n, changes, e.faults), nil
		}
	}
}

// try replays steps, the sequence k names, and returns its Failure,
// shrunk, or nil when it passes.
func (e *explorer) try(t *testing.T, k corpus.Kept, steps []Step) *Failure {
	t.Helper()
	failure := e.replay(t, steps)
	if failure == nil {
		return nil
	}
	fails := func(s []Step) bool { return e.replay(t, s) != nil }
	minimal := withoutFaults(shrink.Minimize(steps, fails), fails)
	last := e.replay(t, minimal)
	if last == nil {
		// Not deterministic: report the whole sequence's failure.
		last, minimal = failure, steps
	}
	return &Failure{Seed: k.Seed, Sequence: k.Sequence, Steps: minimal, Of: len(steps), Err: last, Test: t.Name()}
}

// The fault schedule: each step crashes the operator with probability
// 1/faultOdds, makes its view stale with probability 1/faultOdds, and
// restarts the API server with probability 1/restartOdds, each at one of
// the operator's first maxWrite writes of the step, picked uniformly;
// and fails one of the first maxWrite requests for the step's object
// with probability 1/faultOdds, with one of failures.
// Four writes cover what one reconcile of a typical operator does: a
// finalizer, a child or two, the status. A restart costs seconds, and
// its bugs need it once, not at every step.
const (
	faultOdds   = 2
	restartOdds = 8
	maxWrite    = 4
	// staleStream and restartStream pick the stale views and restarts
	// from streams of their own, so that adding each left every seed's
	// earlier faults as they were.
	staleStream   = 0x5374616c65
	restartStream = 0x52657374617274
	failStream    = 0x4661696c
)

// failures are the errors a failed request meets: an API server that
// can't be reached, one that fails inside, one that is unavailable, and
// one that throttles without saying for how long, so that client-go
// doesn't retry and the operator sees each.
var failures = []int{0, http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests}

// schedule gives each change of the sequence-th sequence of seed its
// faults, the same for the same seed and sequence, of the kinds on
// picks.
func schedule(seed uint64, sequence int, changes []generate.Step, on Faults) []Step {
	crashes := rand.New(rand.NewPCG(seed, uint64(sequence)))
	stale := rand.New(rand.NewPCG(seed, uint64(sequence)^staleStream))
	restarts := rand.New(rand.NewPCG(seed, uint64(sequence)^restartStream))
	fails := rand.New(rand.NewPCG(seed, uint64(sequence)^failStream))
	steps := make([]Step, len(changes))
	for i, c := range changes {
		steps[i].Step = c
		steps[i].CrashAfter = drawWrite(crashes, faultOdds)
		steps[i].StaleFrom = drawWrite(stale, faultOdds)
		steps[i].RestartAfter = drawWrite(restarts, restartOdds)
		steps[i].FailAt = drawWrite(fails, faultOdds)
		steps[i].FailWith = failures[fails.IntN(len(failures))]
		// Drawn and then dropped, so that the draws of the next steps
		// stay the same.
		if on.NoCrashes {
			steps[i].CrashAfter = 0
		}
		if on.NoStaleViews {
			steps[i].StaleFrom = 0
		}
		if !on.Restarts {
			steps[i].RestartAfter = 0
		}
		if on.ScenarioAnnotation == "" || steps[i].FailAt == 0 {
			steps[i].FailAt, steps[i].FailWith = 0, 0
		}
	}
	return steps
}

// drawWrite draws, with probability 1/odds, the write a fault comes at,
// from 1 to maxWrite uniformly, and 0, no fault, otherwise.
func drawWrite(rng *rand.Rand, odds int) int {
	if rng.IntN(odds) != 0 {
		return 0
	}
	return 1 + rng.IntN(maxWrite)
}

// withoutFaults drops each fault of steps that the failure doesn't need,
// one at a time, so the minimal sequence names only the faults that
// matter.
func withoutFaults(steps []Step, fails func([]Step) bool) []Step {
	steps = slices.Clone(steps)
	for i := range steps {
		for _, fault := range []func(*Step) *int{
			func(s *Step) *int { return &s.CrashAfter },
			func(s *Step) *int { return &s.StaleFrom },
			func(s *Step) *int { return &s.RestartAfter },
			func(s *Step) *int { return &s.FailAt },
		} {
			if *fault(&steps[i]) == 0 {
				continue
			}
			try := slices.Clone(steps)
			*fault(&try[i]) = 0
			if try[i].FailAt == 0 {
				try[i].FailWith = 0
			}
			if fails(try) {
				steps = try
			}
		}
	}
	return steps
}

func stepLines(steps []Step) []string {
	lines := make([]string, len(steps))
	for i, s := range steps {
		lines[i] = fmt.Sprintf("%d. %s", i+1, s)
	}
	return lines
}

// explorer is a Config made ready to replay.
type explorer struct {
	cluster    *kubetest.Cluster
	build      Build
	gvr        schema.GroupVersionResource
	kind       string
	apiVersion string
	specSchema *apiextensionsv1.JSONSchemaProps
	settled    func(*unstructured.Unstructured) string
	invariants []Invariant
	names      []string
	sequences  int
	steps      int
	quiet      time.Duration
	settle     time.Duration
	admin      dynamic.Interface
	// crashes counts the replicas crashed, stale the stale views let go,
	// and failed the requests failed, over every replay.
	crashes, stale, failed int
	faults                 Faults
	// server restarts the API server, for every replay.
	server *restarter
	// annotation and codec carry a step's failed requests, when
	// transient errors are on.
	annotation string
	codec      *jsonscenario.Codec
}

func newExplorer[S, T any](c *kubetest.Cluster, cfg Config[S, T]) (*explorer, error) {
	var errs []error
	if cfg.Build == nil {
		errs = append(errs, errors.New("explore.Config.Build is nil"))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Sequences", cfg.Sequences}, {"Steps", cfg.Steps}, {"Objects", cfg.Objects}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("explore.Config.%s %d: want 0 (the default) or more", f.name, f.v))
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"Duration", cfg.Duration}, {"Quiet", cfg.Quiet}, {"Settle", cfg.Settle}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("explore.Config.%s %v: want 0 (the default) or more", f.name, f.v))
		}
	}
	crd, err := cfg.Resource.CRD()
	if err != nil {
		errs = append(errs, fmt.Errorf("explore.Config.Resource: %w", err))
		return nil, errors.Join(errs...)
	}
	gvr := cfg.Resource.GVR()
	var root *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == gvr.Version && v.Schema != nil {
			root = v.Schema.OpenAPIV3Schema
		}
	}
	if root == nil {
		errs = append(errs, fmt.Errorf("explore.Config.Resource: the CRD has no schema for version %s", gvr.Version))
		return nil, errors.Join(errs...)
	}
	spec, ok := root.Properties["spec"]
	if !ok {
		errs = append(errs, fmt.Errorf("explore.Config.Resource: %s has no spec to change", crd.Spec.Names.Kind))
	}
	settled, err := oracle.Settled(root)
	if err != nil {
		errs = append(errs, fmt.Errorf("explore.Config.Resource: %s: %w", crd.Spec.Names.Kind, err))
	}
	admin, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		errs = append(errs, err)
	}
	var codec *jsonscenario.Codec
	if a := cfg.Faults.ScenarioAnnotation; a != "" {
		if msgs := validation.IsQualifiedName(strings.ToLower(a)); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("explore.Config.Faults.ScenarioAnnotation %q: %s", a, strings.Join(msgs, "; ")))
		}
		if codec, err = jsonscenario.New(ScenarioMember); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	objects := cmp.Or(cfg.Objects, 2)
	names := make([]string, objects)
	for i := range names {
		names[i] = fmt.Sprintf("explore-%d", i)
	}
	return &explorer{
		cluster: c, build: cfg.Build, gvr: gvr, kind: crd.Spec.Names.Kind, apiVersion: gvr.GroupVersion().String(),
		specSchema: &spec, settled: settled, invariants: cfg.Invariants, names: names,
		sequences: cmp.Or(cfg.Sequences, 1), steps: cmp.Or(cfg.Steps, 8),
		quiet: cmp.Or(cfg.Quiet, time.Second), settle: cmp.Or(cfg.Settle, 30*time.Second),
		admin: admin, faults: cfg.Faults, server: &restarter{cluster: c},
		annotation: cfg.Faults.ScenarioAnnotation, codec: codec,
	}, nil
}

// writes records the operator's writes, as its proxy sees them: when the
// last one was, and each object it wrote, by name. It crashes the
// operator, and holds back its watches, when a step's faults say so.
type writes struct {
	mu      sync.Mutex
	last    time.Time
	objects map[string]object
	// explored is the explored resource, whose watch is never held back.
	explored schema.GroupResource
	// step counts the writes of the current step; crashAfter, staleFrom
	// and restartAfter are its faults.
	step, crashAfter, staleFrom, restartAfter int
	// restart begins a restart of the API server.
	restart func()
	// seenKinds are the kinds of the objects the operator wrote, as the
	// checks have read them.
	seenKinds map[schema.GroupKind]bool
	// streams are the running replica's watches a stale view holds back,
	// and holding is set while it does.
	streams map[*stream]struct{}
	holding bool
	// crash is the running replica's network, which a crash cuts; crashed
	// is set once it has, and refuses whatever the replica still sends.
	crash   func()
	crashed bool
}

// arm sets the faults of the step about to be made, counting its writes
// from none.
func (w *writes) arm(s Step) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.step, w.crashAfter, w.staleFrom, w.restartAfter = 0, s.CrashAfter, s.StaleFrom, s.RestartAfter
}

// replica sets the network of a new replica, which a crash cuts. The
// new replica's view isn't stale; the crashed one's watches are gone
// with it.
func (w *writes) replica(cut func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.crash, w.crashed, w.crashAfter = cut, false, 0
	w.holding, w.streams = false, map[*stream]struct{}{}
}

// hasCrashed reports whether the running replica has crashed.
func (w *writes) hasCrashed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.crashed
}

// object names one object the API serves.
type object struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

func (o object) String() string {
	if o.namespace == "" {
		return o.gvr.Resource + " " + o.name
	}
	return o.gvr.Resource + " " + o.namespace + "/" + o.name
}

// objectAt parses the API path of one object, of its status, or of a
// collection, which a create is sent to: /api/v1/namespaces/ns/configmaps,
// /apis/group/version/resource/name and the like. A collection's object
// has no name. It reports false for any other path.
func objectAt(path string) (object, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var o object
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		o.gvr.Version, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		o.gvr.Group, o.gvr.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return object{}, false
	}
	if len(parts) > 2 && parts[len(parts)-1] == "status" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		o.namespace, parts = parts[1], parts[2:]
	}
	switch len(parts) {
	case 1:
		o.gvr.Resource = parts[0]
	case 2:
		o.gvr.Resource, o.name = parts[0], parts[1]
	default:
		return object{}, false
	}
	return o, true
}

// serve passes r on to next, unless the replica has crashed or r is a
// write past the one the replica crashes after: those never land. Once
// the write it crashes after has landed, it crashes the replica, and
// once the write the API server restarts after has, it begins the
// restart. A watch's response goes through a stream a stale view can
// hold back.
func (w *writes) serve(rw http.ResponseWriter, r *http.Request, next http.Handler) {
	pass, crash, restart := w.saw(r)
	if !pass {
		panic(http.ErrAbortHandler)
	}
	if s := w.watching(rw, r); s != nil {
		defer w.unwatch(s)
		rw = s
	}
	next.ServeHTTP(rw, r)
	if restart {
		w.restart()
	}
	if crash {
		w.mu.Lock()
		w.crashed = true
		cut := w.crash
		w.mu.Unlock()
		cut()
	}
}

// saw records r, and reports whether it may pass, and whether it is the
// write the replica crashes after, and the one the API server restarts
// after. At the write the view goes stale
// from, it holds the watches back before the write goes on, so that
// they don't tell of its change.
func (w *writes) saw(r *http.Request) (pass, crash, restart bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.crashed {
		return false, false, false
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true, false, false
	}
	o, parsed := objectAt(r.URL.Path)
	if parsed && (o.gvr.Resource == "leases" || o.gvr.Resource == "events") {
		// The Lease and Events are the operator's own bookkeeping, not
		// changes to what it manages.
		return true, false, false
	}
	w.step++
	if w.crashAfter > 0 && w.step > w.crashAfter {
		return false, false, false
	}
	w.last = time.Now()
	if parsed && o.name != "" {
		w.objects[o.String()] = o
	}
	if w.step == w.staleFrom {
		w.holdLocked()
	}
	return true, w.step == w.crashAfter, w.step == w.restartAfter
}

func (w *writes) since() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.last)
}

// kinds adds the kinds of written, objects the operator wrote, to those
// it has been seen to write in this replay, and returns them, with
// explored: the kinds whose objects, once gone, the garbage collector
// collects the dependents of. A kind stays known after its last object
// is gone, which is when its dependents are collected.
func (w *writes) kinds(explored schema.GroupKind, written map[string]*unstructured.Unstructured) map[schema.GroupKind]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seenKinds == nil {
		w.seenKinds = map[schema.GroupKind]bool{}
	}
	w.seenKinds[explored] = true
	for _, u := range written {
		w.seenKinds[u.GroupVersionKind().GroupKind()] = true
	}
	return maps.Clone(w.seenKinds)
}

func (w *writes) written() []object {
	w.mu.Lock()
	defer w.mu.Unlock()
	objects := make([]object, 0, len(w.objects))
	for _, o := range w.objects {
		objects = append(objects, o)
	}
	return objects
}

// replay runs steps against a fresh namespace with a fresh operator, and
// returns what failed first, or nil.
func (e *explorer) replay(t *testing.T, steps []Step) error {
	t.Helper()
	ctx := t.Context()
	w := &writes{objects: map[string]object{}, last: time.Now(), explored: e.gvr.GroupResource()}
	r := &replicas{t: t, e: e, ns: e.cluster.Namespace(t), w: w, server: e.server}
	w.restart = func() { r.server.begin(ctx) }
	defer func() {
		if err := r.server.wait(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("explore: %v", err)
		}
	}()
	proxy := e.cluster.Proxy(t, r.w.serve)
	r.conn = proxy.Connection()
	r.conn.Token = e.cluster.Connection().Token
	if err := r.start(); err != nil {
		return err
	}
	defer r.stop()
	objects := e.admin.Resource(e.gvr).Namespace(r.ns)

	for i, step := range steps {
		if err := r.server.wait(ctx); err != nil {
			return err
		}
		r.w.arm(step)
		scenario, err := e.scenario(i, step)
		if err != nil {
			return err
		}
		if err := e.do(ctx, objects, r.ns, step.Step, scenario); err != nil {
			return fmt.Errorf("step %d, %s: %w", i+1, step, err)
		}
		if err := e.check(ctx, r); err != nil {
			return fmt.Errorf("after step %d, %s: %w", i+1, step, err)
		}
	}
	// The last step's faults, if they didn't come, don't carry over.
	r.w.arm(Step{})
	r.w.release()
	if err := r.server.wait(ctx); err != nil {
		return err
	}
	if err := e.deleteAll(ctx, objects, r); err != nil {
		return fmt.Errorf("after deleting every %s: %w", e.kind, err)
	}
	return nil
}

// replicas runs the operator of one replay, a replica at a time: a fresh
// one replaces one that crashed.
type replicas struct {
	t    *testing.T
	e    *explorer
	ns   string
	w    *writes
	conn kube.Connection
	// server restarts the API server.
	server *restarter
	// app is the running replica, and synced the Monitors of its
	// Services' caches: those that have a Synced method, as a
	// kube.Controller has.
	app    *apptest.App
	synced []health.Monitor
	// syncedAt is when the running replica was first seen synced, or
	// zero while it isn't yet.
	syncedAt time.Time
	// panics are the panics of the replicas stopped.
	panics []string
}

// start starts a fresh replica behind a network of its own, which a
// crash cuts.
func (r *replicas) start() error {
	network := &apptest.Switch{}
	r.w.replica(network.Cut)
	options := []app.Option{app.WithHost(app.Host{Network: network})}
	if r.e.codec != nil {
		options = append(options, app.WithFaults(fault.Settings{Decoder: r.e.codec}))
	}
	var built bool
	var synced []health.Monitor
	a := apptest.Start(r.t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, r.conn)
		if err != nil {
			return nil, err
		}
		services, err := r.e.build(s, client, r.ns)
		built = err == nil
		for _, svc := range services {
			if c, ok := svc.(interface{ Synced() health.Monitor }); ok {
				synced = append(synced, c.Synced())
			}
		}
		return services, err
	}, apptest.WithAppOptions(options...))
	a.Setup()
	r.app, r.synced, r.syncedAt = a, synced, time.Time{}
	if !built {
		return fmt.Errorf("the Build failed: %s", wait.Report("the operator", a, a.Telemetry()))
	}
	return nil
}

// quiet returns how long the running replica has been quiet: since the
// operator's last write, or since the replica was first seen synced,
// whichever is later, and 0 while it isn't synced. A fresh replica
// writes nothing until its caches have synced and it has reconciled,
// which may take longer than Quiet: until then its quiet says nothing.
func (r *replicas) quiet(ctx context.Context) time.Duration {
	for _, m := range r.synced {
		if ok, err := m.Healthy(ctx); !ok || err != nil {
			r.syncedAt = time.Time{}
			return 0
		}
	}
	if r.syncedAt.IsZero() {
		r.syncedAt = time.Now()
	}
	return min(r.w.since(), time.Since(r.syncedAt))
}

// stop stops the running replica, keeping what panicked in it, and
// counting the requests it had fail.
func (r *replicas) stop() {
	r.app.Stop()
	r.panics = append(r.panics, r.app.Telemetry().ExceptionMessages("reconcile panicked")...)
	r.e.failed += len(r.app.Telemetry().ExceptionMessages(fault.InjectedBody))
}

// recover replaces the running replica with a fresh one once it has
// crashed. A crashed replica is cut off: its stop, which would release
// the Lease, reaches nothing.
func (r *replicas) recover() error {
	if !r.w.hasCrashed() {
		return nil
	}
	r.e.crashes++
	r.stop()
	// A fresh replica that started while the API server restarts would
	// fail its first list and exit, and the kubelet would start it again
	// until the server were back: it starts once the server is back.
	if err := r.server.wait(r.t.Context()); err != nil {
		return err
	}
	return r.start()
}

// panicked returns what panicked in any replica so far.
func (r *replicas) panicked() []string {
	return append(slices.Clone(r.panics), r.app.Telemetry().ExceptionMessages("reconcile panicked")...)
}

// pause waits a poll's interval, and fails when ctx ends or the running
// replica exits on its own first, unless it had crashed.
func (r *replicas) pause(ctx context.Context) error {
	if err := r.recover(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-r.app.Done():
		if r.w.hasCrashed() {
			// Cut off by its crash since the recover above, it lost its
			// Lease and exited, as a crashed replica may.
			return r.recover()
		}
		return fmt.Errorf("the operator exited with %d: %s", r.app.Wait(), wait.Report("the operator", r.app, r.app.Telemetry()))
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}

// scenario returns the value of the annotation that fails the request
// the i-th step's FailAt names, or "" when it fails none. Its ID names the
// step, so that each step's scenario is counted afresh.
func (e *explorer) scenario(i int, step Step) (string, error) {
	if step.FailAt == 0 {
		return "", nil
	}
	var rules []fit.Rule
	if step.FailAt > 1 {
		// The zero Fault lets the requests before it through, counted.
		rules = append(rules, fit.Rule{Point: "kube:*", Count: step.FailAt - 1})
	}
	rules = append(rules, fit.Rule{Point: "kube:*", Count: 1, Fault: fit.Fault{Abort: step.FailWith == 0, Status: step.FailWith}})
	ctx, err := fit.ContextWithScenario(context.Background(), e.codec, fit.Scenario{ID: fmt.Sprintf("explore-step-%d", i+1), Rules: rules})
	if err != nil {
		return "", fmt.Errorf("step %d, %s: %w", i+1, step, err)
	}
	return baggage.FromContext(ctx).String(), nil
}

// do makes one step's change, with scenario in the explored object's
// annotation, or none when it is "", when transient errors are on. A
// step the cluster's state makes pointless, as a shrunk sequence may hold
// (an update of an object that isn't there), and a spec the API server
// refuses (a CEL rule the generator doesn't solve), are skipped: wasted,
// not failed.
func (e *explorer) do(ctx context.Context, objects dynamic.ResourceInterface, ns string, step generate.Step, scenario string) error {
	var err error
	switch step.Op {
	case generate.Create:
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": e.apiVersion, "kind": e.kind,
			"metadata": map[string]any{"name": step.Name, "namespace": ns},
			"spec":     step.Spec,
		}}
		if scenario != "" {
			u.SetAnnotations(map[string]string{e.annotation: scenario})
		}
		_, err = objects.Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	case generate.Update:
		err = e.updateSpec(ctx, objects, step.Name, step.Spec, scenario)
	case generate.Delete:
		if e.annotation != "" {
			// The finalizer's reconciles carry the delete's scenario, or
			// none: not one an earlier step left.
			value := any(nil)
			if scenario != "" {
				value = scenario
			}
			patch, merr := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{e.annotation: value}}})
			if merr != nil {
				return merr
			}
			if _, err = objects.Patch(ctx, step.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				break
			}
		}
		err = objects.Delete(ctx, step.Name, metav1.DeleteOptions{})
	}
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
}

// updateSpec replaces name's whole spec, and its scenario annotation
// when transient errors are on, retrying on a conflict with the
// operator's own writes.
func (e *explorer) updateSpec(ctx context.Context, objects dynamic.ResourceInterface, name string, spec map[string]any, scenario string) error {
	for {
		u, err := objects.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if u.GetDeletionTimestamp() != nil {
			return nil
		}
		u.Object["spec"] = spec
		if e.annotation != "" {
			annotations := u.GetAnnotations()
			delete(annotations, e.annotation)
			if scenario != "" {
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[e.annotation] = scenario
			}
			u.SetAnnotations(annotations)
		}
		_, err = objects.Update(ctx, u, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
	}
}

// check checks the step just made, as checkOnce does, again when it
// failed while the API server restarted: what was read then, or failed
// to be, says nothing of the operator.
func (e *explorer) check(ctx context.Context, r *replicas) error {
	for {
		began := time.Now()
		err := e.checkOnce(ctx, r)
		if err == nil || !r.server.during(began) {
			return err
		}
		if err := r.server.wait(ctx); err != nil {
			return err
		}
	}
}

// checkOnce waits until the operator has written nothing for Quiet and
// every object is settled, then checks the invariants, that the operator
// stays quiet for another Quiet, and that nothing panicked.
func (e *explorer) checkOnce(ctx context.Context, r *replicas) error {
	w, ns := r.w, r.ns
	objects := e.admin.Resource(e.gvr).Namespace(ns)
	start := time.Now()
	var why string
	for {
		list, err := objects.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		why = ""
		for i := range list.Items {
			if list.Items[i].GetDeletionTimestamp() != nil {
				why = list.Items[i].GetName() + ": still being deleted"
				break
			}
			if why = e.settled(&list.Items[i]); why != "" {
				break
			}
		}
		if why == "" {
			written, err := e.read(ctx, w)
			if err != nil {
				return err
			}
			why = collecting(w.kinds(schema.GroupKind{Group: e.gvr.Group, Kind: e.kind}, written), written, list.Items)
		}
		quiet := r.quiet(ctx)
		if quiet >= e.quiet && w.release() {
			e.stale++
			// The operator has done what it does with its stale view:
			// let it see what it missed, and wait for it to be quiet
			// again.
			continue
		}
		if why == "" && quiet >= e.quiet && !w.hasCrashed() {
			break
		}
		if time.Now().After(r.server.deadline(start, e.settle)) {
			switch {
			case why != "":
			case r.syncedAt.IsZero():
				why = "the operator's caches haven't synced"
			default:
				why = fmt.Sprintf("the operator still writes, the last time %v ago", w.since().Round(time.Millisecond))
			}
			// The time waited, which a restart makes longer than Settle.
			return fmt.Errorf("not settled within %v: %s", time.Since(start).Round(100*time.Millisecond), why)
		}
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
	var errs []error
	for _, inv := range e.invariants {
		if err := inv.Check(ctx, e.admin, ns); err != nil {
			errs = append(errs, fmt.Errorf("invariant %q: %w", inv.Name, err))
		}
	}
	before, err := e.versions(ctx, w)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(e.quiet):
	}
	after, err := e.versions(ctx, w)
	if err != nil {
		return err
	}
	if changed := oracle.Changed(before, after); len(changed) > 0 {
		slices.Sort(changed)
		errs = append(errs, fmt.Errorf("the operator isn't quiet: with nothing to do, it changed %s", strings.Join(changed, ", ")))
	}
	if msgs := r.panicked(); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("a reconcile panicked: %s", msgs[0]))
	}
	return errors.Join(errs...)
}

// read returns each object the operator has written that is still
// there, by its name.
func (e *explorer) read(ctx context.Context, w *writes) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range w.written() {
		u, err := e.admin.Resource(o.gvr).Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", o, err)
		}
		out[o.String()] = u
	}
	return out, nil
}

// versions returns the resourceVersion of each object the operator has
// written, by its name, leaving out those gone.
func (e *explorer) versions(ctx context.Context, w *writes) (map[string]string, error) {
	written, err := e.read(ctx, w)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(written))
	for k, u := range written {
		out[k] = u.GetResourceVersion()
	}
	return out, nil
}

// collecting says which written object the cluster, not the operator,
// is still to change, or "" when none is: one being deleted, or one whose
// owner is gone, which the garbage collector deletes in its own time.
// Without waiting for those, the collector's delete after a step would
// look like the operator's write. An owner is known gone when it is of
// a known kind, the explored one or one the operator wrote, and no object
// of owners (every object of the explored kind) or written has its UID.
// The known kinds are passed, not read off owners and written: after the
// last object of a kind is deleted, none is left to say what kind it
// was, and that is when its dependents are collected. Kinds are compared
// without their version: an owner reference may name any version the
// kind is served at.
func collecting(known map[schema.GroupKind]bool, written map[string]*unstructured.Unstructured, owners []unstructured.Unstructured) string {
	alive := map[types.UID]bool{}
	for i := range owners {
		alive[owners[i].GetUID()] = true
	}
	for _, u := range written {
		alive[u.GetUID()] = true
	}
	keys := slices.Sorted(maps.Keys(written))
	for _, k := range keys {
		u := written[k]
		if u.GetDeletionTimestamp() != nil {
			return k + ": still being deleted"
		}
		for _, ref := range u.GetOwnerReferences() {
			gk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind).GroupKind()
			if known[gk] && !alive[ref.UID] {
				return fmt.Sprintf("%s: its owner %s %s is gone, and the garbage collector is still to delete it", k, ref.Kind, ref.Name)
			}
		}
	}
	return ""
}

// deleteAll deletes every object and waits until each is gone, with what
// the operator wrote for it: finalizers removed, children collected.
func (e *explorer) deleteAll(ctx context.Context, objects dynamic.ResourceInterface, r *replicas) error {
	w := r.w
	if err := objects.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	start := time.Now()
	for {
		left, err := e.versions(ctx, w)
		if err != nil {
			return err
		}
		list, err := objects.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, u := range list.Items {
			left[fmt.Sprintf("%s %s (finalizers %v)", e.kind, u.GetName(), u.GetFinalizers())] = ""
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(r.server.deadline(start, e.settle)) {
			keys := make([]string, 0, len(left))
			for k := range left {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			return fmt.Errorf("left behind after %v: %s", time.Since(start).Round(100*time.Millisecond), strings.Join(keys, ", "))
		}
		if err := r.pause(ctx); err != nil {
			return err
		}
	}
}
