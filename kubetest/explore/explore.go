// Package explore explores an operator inside go test, the way Sieve and
// Acto do outside it (issue #25): it generates sequences of changes to a
// custom resource from its reflected schema, replays each against a
// kubetest cluster with the operator running, checks after each step,
// without being told, that the operator settled every object, kept the
// end user's invariants, went quiet and didn't reconcile in a loop, and
// checks at the end that deleting the objects leaves nothing behind.
// Two differential oracles need no invariant: after each step, a fresh
// object of the step's spec must come to what the stepped object came
// to, and a sequence with faults must end where it ends without them. A
// failing sequence is shrunk to a minimal one, reported with its seed,
// and kept with its steps and faults, to replay exactly. A run that
// explored next to nothing, its steps refused by the API server or no
// reconcile succeeding, fails as empty.
//
// Each step may also perturb the operator, Sieve-style, at one of its
// writes: a crash right after the operator's k-th write of the step cuts
// its network, so nothing more it sends lands, the Lease included, and a
// fresh replica takes over; a stale view holds back, from its k-th write
// on, what its watches of every resource but the explored one would tell
// it, until it has been quiet; with Faults.LostEvents, lost events end
// its watches from its k-th write on and answer them, when they watch
// again, as expired, as after a compaction, so its informers list again
// and never see the states between; with Faults.OldLists, old lists
// answer its lists, from its k-th write on, from the state right before
// it, as far as each list lets the API server (old.go), so a fresh
// replica's first view is old; and, with Faults.Restarts, an API server
// restart right after its k-th write takes every connection and watch
// away, and brings the server back with every object where it was; and,
// with Faults.ScenarioAnnotation, transient errors through loam's own
// failure injection answer the operator's k-th request for the step's
// object with an error, as an overloaded or unreachable API server would;
// and, with Faults.Down, a step's change is made while the operator is
// down, its webhooks down with it (down.go). With Config.Versions, steps
// are written in other versions of the resource too, and a versions'
// oracle checks the conversion (versions.go).
//
// With Faults.Kubelet, on a cluster with kubetest's fake kubelet and
// workload controllers, a step may also change the world under the
// operator: the kubelet's fault for the replay's namespace, so that the
// Pods of its Deployments and StatefulSets never become ready,
// crash-loop, become ready in part, or come alive again. A step settles
// only once those Pods and workloads have; and the health oracle, on by
// default, fails a step after which an explored object says it is
// Available (or Ready) while a Deployment or StatefulSet it controls
// isn't (health.go).
package explore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/corpus"
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
	// KeptOnly replays the kept sequences alone, and no new one, as go
	// test without -fuzz runs a fuzz target's corpus alone: a regression
	// run, which Sequences and Duration must leave unset.
	KeptOnly bool
	// Quiet is how long the operator must write nothing before the
	// explorer checks (default 1 s), and Settle how long a step may take
	// to settle (default 30 s).
	Quiet, Settle time.Duration
	// LoopRate is how many times a second the operator may reconcile one
	// object while it writes nothing (default 10): above it, and at least
	// three times, in the Quiet before a check and the Quiet of the
	// check, the operator reconciles in a loop, and the step fails.
	// math.Inf(1) lets it reconcile as often as it likes.
	LoopRate float64
	// Corpus is the directory of kept sequences, which are replayed
	// before any other, and where Run keeps a failing one: by default
	// testdata/explore/ and the test's name, as go test -fuzz keeps its
	// inputs.
	Corpus string
	// Faults picks the kinds of fault the explorer injects: by default
	// crashes and stale views.
	Faults Faults
	// ConfigMaps and Secrets are created in each replay's namespace
	// before its first step, for the explored objects to name. Leave
	// their Namespace empty: each replay has its own.
	ConfigMaps []corev1.ConfigMap
	Secrets    []corev1.Secret
	// References names the string fields of the spec that name a
	// ConfigMap or a Secret of the namespace, by their path from the
	// spec, such as "configMap" or "auth.secretName", each with the kind
	// it names, "ConfigMap" or "Secret". The generator draws such a
	// field from the names of the Config's objects of that kind or, one
	// time in n+1 for n of them, makes a name as for any other string,
	// so that an object missing is explored too.
	References map[string]string
	// Volatile names what the differential oracles (differential.go)
	// leave out of their comparisons, beyond names, uids, timestamps
	// and generations, which they always leave out: each entry a kind
	// and, after a dot, a path in its objects, such as
	// "Deployment.spec.template.metadata.annotations['example.com/at']"
	// or "Memcached.status.conditions[*].message", where [*] is every
	// item of a list and ['k'] a key with dots in it. A kind alone, such
	// as "Deployment", makes which of its objects there are volatile:
	// those both sides have are still compared. The explored kind's
	// paths start at status, the part of it the oracles compare.
	Volatile []string
	// NoFreshCreates turns off the oracle that creates, after each step,
	// a fresh object of the step's spec and compares what the operator
	// makes of it with the stepped object; NoUnfaultedReplays the one
	// that replays a sequence that had faults without them and compares
	// where the two end. Each costs time: see differential.go.
	NoFreshCreates, NoUnfaultedReplays bool
	// NoHealthOracle turns off the health oracle (health.go): after each
	// step, an explored object with a condition of one of
	// HealthConditions' types True, while a Deployment or StatefulSet it
	// controls isn't available, fails the step. HealthConditions are
	// those types: Available and Ready when nil; empty, with the oracle
	// on, it is a mistake, as the oracle would judge nothing. It judges only
	// on a cluster with kubetest.WithWorkloadControllers, whose
	// Deployments have a status.
	NoHealthOracle   bool
	HealthConditions []string
	// External is what the operator keeps outside the cluster, if
	// anything: how each replay names it apart, and what must hold of
	// it after the final delete.
	External External
	// Versions are other served versions of Resource, each with the
	// conversion of a spec to it (VersionOf): each step is written in
	// Resource's version or one of these, uniformly, and after a step
	// written in another, the versions' oracle checks that the object
	// reads back in Resource's version as the same spec written there
	// does, and that what it wrote reads back in its own version as
	// that spec converts to (versions.go). Everything else reads
	// Resource's version.
	Versions []Version[S]
	// Files are the files of each replica's Host, by slash-separated
	// paths relative to its directory, which is its working directory:
	// what Build's Setup reads through its Host, such as the serving
	// certificate of the operator's webhooks (kube.NewWebhooks).
	Files map[string][]byte
	// OneReplicaAtATime keeps replays from running side by side: the
	// kept sequences, which otherwise replay up to four at once, each
	// with an operator of its own, replay one after another. Set it
	// when two replicas can't run at once, as when each serves its
	// webhooks at the one address the cluster's webhook configurations
	// and CRD call: the second would fail to listen.
	OneReplicaAtATime bool
}

// ScenarioMember is the W3C baggage member the explorer's scenarios
// travel in: each replica of the operator runs with
// app.WithFaults and a jsonscenario codec of this member.
const ScenarioMember = "loam.explore"

// Faults picks the kinds of fault the explorer injects. The zero Faults
// injects crashes and stale views, not lost events, old lists,
// restarts, transient errors or kubelet faults. A kind turned off leaves
// the others where they were: the same seed gives the same crashes with
// stale views or without.
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
	// LostEvents turns on lost events (lost.go): from the operator's
	// k-th write of a step on, its watches are ended and answered, when
	// they watch again, as the API server answers a watch from a
	// resourceVersion compacted away, so that its informers list again
	// and never see the states between. They are off by default: each
	// costs the reflectors' backoff before they list again, which grows
	// while they keep coming, and adding them by default would have
	// changed every seed's sequences' faults. A kept sequence replays its
	// lost events whatever the Config.
	LostEvents bool
	// OldLists turns on old lists (old.go): from the operator's k-th
	// write of a step on, its lists that the API server may answer from
	// an older state, a reflector's first list from resourceVersion "0"
	// or a relist not older than its last resourceVersion, are answered
	// from the state right before that write, as far as each request
	// allows, and its streamed lists refused, as by an API server
	// without WatchList, so that its reflectors list. They bite a step's
	// lists, a crash's fresh replica's first of all. They are off by
	// default, so that adding them left every seed's sequences' faults
	// as they were. A kept sequence replays its old lists whatever the
	// Config.
	OldLists bool
	// Kubelet turns on the kubelet's faults (kubeletfaults.go): a step
	// may, right before its change, set the replay's namespace's
	// kubelet.FaultAnnotation, so that the Pods of every Deployment and
	// StatefulSet there never become ready, crash-loop, become ready only
	// one or two of each, or, with Healthy, all come alive again. They
	// are the world's state, not the operator's fault: the differential
	// oracles compare under the same one. The cluster must run the fake
	// kubelet and the workload controllers (kubetest.WithFakeKubelet,
	// kubetest.WithWorkloadControllers).
	Kubelet bool
	// Down turns on steps made while the operator is down: with
	// probability 1/4, a step crashes the running replica before its
	// change, which is tried at once, and starts a fresh one after. An
	// operator that serves webhooks takes them down with it, so the API
	// server refuses, with failurePolicy Fail, what they admit: such a
	// change is made again once the fresh replica is up, and counted
	// (down.go).
	Down bool
	// Restarts turns on the API server's restarts. They are off by
	// default because each costs seconds, and more after it: every
	// client's watches back off while the server is away, client-go's up
	// to 30 s when restarts come often, the cluster's garbage collector's
	// included, so a step after a restart is given that much longer to
	// settle, and a search for a bug that never settles waits that much
	// longer for each failing replay.
	Restarts bool
}

// Run explores cfg's operator on c, and fails t with the Failure Find
// returns, or with what is wrong with cfg or with the exploration.
//
// Run keeps a failing sequence in cfg's Corpus, its steps and their
// faults, so that every later run replays it first, as go test -fuzz
// keeps a failing input: commit the file with the fix. It rewrites a
// kept sequence of the first form, "seed S sequence N", with the steps it
// stands for: commit that too.
func Run[S, T any](t *testing.T, c *kubetest.Cluster, cfg Config[S, T]) {
	t.Helper()
	f, err := find(t, c, cfg, true)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if f == nil {
		return
	}
	path, err := keep(cmp.Or(cfg.Corpus, corpus.Dir(t)), f)
	if err != nil {
		t.Fatalf("explore: %v\nkeeping it failed: %v", f, err)
	}
	t.Fatalf("explore: %v\nkept in %s", f, path)
}

// ErrEmpty is what Find returns, wrapped with the reason, when an
// exploration that found no failure explored next to nothing: most of
// its steps were refused by the API server, or none of the operator's
// reconciles succeeded. A clean run must have run something.
var ErrEmpty = errors.New("the exploration explored next to nothing")

// Find replays the sequences kept in cfg's Corpus, then cfg's Sequences
// sequences from Seed (or as many as Duration allows, or none with
// KeptOnly) on c, and returns the first that fails, shrunk by replaying
// shorter ones, or nil when none does. It returns an error, naming
// every mistake, when cfg is wrong: a Resource with no CRD, no spec or
// no status that records an observed generation, no Build, a negative
// count, duration or rate, a Volatile entry that doesn't parse,
// KeptOnly with Sequences or Duration, an empty HealthConditions with
// the health oracle on, a Versions entry that is wrong or
// that the cluster doesn't serve, a File outside the Host's directory, a
// kept sequence that doesn't read, that fails requests without
// Faults.ScenarioAnnotation or that writes in a version no Versions
// names, or KeptOnly with none kept. When none
// fails, it returns an error wrapping ErrEmpty when most steps were
// refused by the API server, or no reconcile succeeded. c should run
// the garbage collector (kubetest.WithControllerManager), or children
// owned by deleted objects are reported as left behind. Find keeps
// nothing in the Corpus, and rewrites nothing there.
func Find[S, T any](t *testing.T, c *kubetest.Cluster, cfg Config[S, T]) (*Failure, error) {
	t.Helper()
	return find(t, c, cfg, false)
}

// find is Find, and rewrites a kept sequence of the first form with its
// steps when migrate is set.
func find[S, T any](t *testing.T, c *kubetest.Cluster, cfg Config[S, T], migrate bool) (*Failure, error) {
	t.Helper()
	start := time.Now()
	e, err := newExplorer(c, cfg)
	if e == nil {
		return nil, err
	}
	// The kept sequences' mistakes are cfg's too: they are reported
	// with the rest. A sequence of the first form is regenerated only
	// from a cfg that is right.
	dir := cmp.Or(cfg.Corpus, corpus.Dir(t))
	kept, kerr := e.readKept(dir, err == nil)
	err = errors.Join(err, kerr)
	if cfg.KeptOnly && len(kept) == 0 && kerr == nil {
		err = errors.Join(err, fmt.Errorf("explore.Config.KeptOnly: no kept sequence in %s to replay", dir))
	}
	if err != nil {
		return nil, err
	}
	if migrate {
		for _, k := range kept {
			if err := k.migrate(t, e); err != nil {
				return nil, err
			}
		}
	}
	if f := e.replayKept(t, kept); f != nil {
		return f, nil
	}
	g := e.generator(cfg.Seed)
	began := time.Now()
	n := 0
	for ; !cfg.KeptOnly && (cfg.Duration > 0 && time.Since(began) < cfg.Duration || cfg.Duration == 0 && n < e.sequences); n++ {
		changes, err := g.Steps(e.specSchema, e.names, e.steps)
		if err != nil {
			return nil, fmt.Errorf("sequence %d of seed %d: %w", n, cfg.Seed, err)
		}
		if f := e.try(t, origin{seed: cfg.Seed, sequence: n}, e.extend(cfg.Seed, n, schedule(cfg.Seed, n, changes, e.faults))); f != nil {
			return f, nil
		}
	}
	total := e.counted()
	t.Logf("explore: %d kept sequences and %d of seed %d, of %d steps, clean: %s, through %d crashes, %d stale views, %d cuts losing events, %d lists served old, %d API server restarts (%v of restarting), %d failed requests and %d kubelet faults in %v",
		len(kept), n, cfg.Seed, e.steps, total.tally, total.crashes, total.stale, total.lost, total.old, e.server.count(), e.server.spent().Round(100*time.Millisecond), total.failed, total.tally.kubelet, time.Since(start).Round(time.Second))
	if why := total.tally.empty(); why != "" {
		return nil, fmt.Errorf("explore: %w: %s", ErrEmpty, why)
	}
	return nil, nil
}

// sequence returns the n-th sequence of seed, with its faults.
func (e *explorer) sequence(seed uint64, n int) ([]Step, error) {
	g := e.generator(seed)
	for i := 0; ; i++ {
		changes, err := g.Steps(e.specSchema, e.names, e.steps)
		if err != nil {
			return nil, fmt.Errorf("sequence %d of seed %d: %w", i, seed, err)
		}
		if i == n {
			return e.extend(seed, n, schedule(seed, n, changes, e.faults)), nil
		}
	}
}

// origin says where a sequence came from: the sequence-th of seed, or
// the kept file kept.
type origin struct {
	seed     uint64
	sequence int
	kept     string
}

// try replays steps, the sequence from names, and returns its Failure,
// shrunk, or nil when it passes.
func (e *explorer) try(t *testing.T, from origin, steps []Step) *Failure {
	t.Helper()
	whole := answer{refused: make([]string, len(steps))}
	if whole.err = e.replay(t, steps, whole.refused); whole.err == nil {
		return nil
	}
	shrunk, last := minimal(steps, whole, func(s []Step, refused []string) error { return e.replay(t, s, refused) })
	return &Failure{Seed: from.seed, Sequence: from.sequence, Kept: from.kept, Steps: shrunk, Of: len(steps), Refused: last.refused, Err: last.err, Test: t.Name()}
}
