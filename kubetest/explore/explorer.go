package explore

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/oracle"
)

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
	// loopRate is the rate of reconciles of one object, a second, above
	// which an operator that writes nothing is in a loop.
	loopRate float64
	// mu guards total: what every replay that has ended counted, as
	// replays may run side by side (kept.go).
	mu     sync.Mutex
	total  counted
	faults Faults
	// server restarts the API server, for every replay.
	server *restarter
	// seeds are the objects created in each replay's namespace before
	// its first step, and refs the names each field of the spec that
	// names one is drawn from, by its path.
	seeds []seed
	refs  map[string][]string
	// annotation and codec carry a step's failed requests, when
	// transient errors are on.
	annotation string
	codec      *jsonscenario.Codec
	// volatile is what the differential oracles leave out, and noFresh
	// and noUnfaulted turn them off (differential.go).
	volatile             []volatile
	noFresh, noUnfaulted bool
	// externalSpec and gone are the Config's External.
	externalSpec func(namespace, name string, spec map[string]any)
	gone         []Invariant
	// workloads is set when the cluster runs the workload controllers,
	// and kubeletNeeds says what it lacks for kubelet faults (health.go,
	// kubeletfaults.go); noHealth and healthTypes are the health
	// oracle's Config.
	workloads    bool
	kubeletNeeds string
	// kubelet is set when the cluster runs the fake kubelet, without
	// which no Pod ever leaves Pending (health.go).
	kubelet  bool
	noHealth bool
	// atOnce is how many kept sequences replay side by side at most.
	atOnce      int
	healthTypes []string
	// otherVersions are the Config's Versions by name, versionNames
	// their names in order, and files the Config's Files.
	otherVersions map[string]version
	versionNames  []string
	files         map[string][]byte
}

// newExplorer returns cfg made ready to replay on c, or an error naming
// every mistake in cfg. With an error, it returns an explorer too when
// cfg's Resource has a spec to change, to read the kept sequences by,
// though not to replay them.
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
	if cfg.LoopRate < 0 || math.IsNaN(cfg.LoopRate) {
		errs = append(errs, fmt.Errorf("explore.Config.LoopRate %v: want 0 (the default) or more", cfg.LoopRate))
	}
	if cfg.KeptOnly && (cfg.Sequences != 0 || cfg.Duration != 0) {
		errs = append(errs, fmt.Errorf("explore.Config.KeptOnly with Sequences %d and Duration %v: KeptOnly replays no new sequence, so leave both 0", cfg.Sequences, cfg.Duration))
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
	seedObjects, seedNames, err := seeds(cfg.ConfigMaps, cfg.Secrets)
	if err != nil {
		errs = append(errs, err)
	}
	var refs map[string][]string
	if ok {
		if refs, err = references(cfg.References, &spec, seedNames); err != nil {
			errs = append(errs, err)
		}
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
	volatiles, err := parseVolatile(cfg.Volatile, crd.Spec.Names.Kind)
	if err != nil {
		errs = append(errs, err)
	}
	if err := kubeletMistakes(c, cfg.Faults); err != nil {
		errs = append(errs, err)
	}
	if cfg.HealthConditions != nil && len(cfg.HealthConditions) == 0 && !cfg.NoHealthOracle {
		// An oracle with no condition to read would pass every step.
		errs = append(errs, errors.New("explore.Config.HealthConditions is empty: the health oracle would judge nothing; leave it nil for Available and Ready, or set NoHealthOracle"))
	}
	for i, typ := range cfg.HealthConditions {
		if typ == "" {
			errs = append(errs, fmt.Errorf("explore.Config.HealthConditions[%d]: empty, want a condition type such as Available", i))
		}
	}
	var versions map[string]version
	var versionNames []string
	if len(cfg.Versions) > 0 {
		disco, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
		if err != nil {
			errs = append(errs, err)
		}
		if versions, versionNames, err = versionsOf(cfg, disco); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Files)) {
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			errs = append(errs, fmt.Errorf("explore.Config.Files %q: want a path relative to the Host's directory, inside it", name))
		}
	}
	objects := cmp.Or(cfg.Objects, 2)
	names := make([]string, max(objects, 0))
	for i := range names {
		names[i] = fmt.Sprintf("explore-%d", i)
	}
	e := &explorer{
		cluster: c, build: cfg.Build, gvr: gvr, kind: crd.Spec.Names.Kind, apiVersion: gvr.GroupVersion().String(),
		specSchema: &spec, settled: settled, invariants: cfg.Invariants, names: names,
		sequences: cmp.Or(cfg.Sequences, 1), steps: cmp.Or(cfg.Steps, 8),
		quiet: cmp.Or(cfg.Quiet, time.Second), settle: cmp.Or(cfg.Settle, 30*time.Second), loopRate: cmp.Or(cfg.LoopRate, defaultLoopRate),
		admin: admin, faults: cfg.Faults, server: &restarter{cluster: c},
		annotation: cfg.Faults.ScenarioAnnotation, codec: codec, seeds: seedObjects, refs: refs,
		volatile: volatiles, noFresh: cfg.NoFreshCreates, noUnfaulted: cfg.NoUnfaultedReplays,
		externalSpec: cfg.External.Spec, gone: cfg.External.Gone,
		workloads: c.RunsWorkloadControllers(), kubeletNeeds: kubeletNeeds(c), kubelet: c.RunsFakeKubelet(),
		noHealth: cfg.NoHealthOracle, healthTypes: cfg.HealthConditions,
		atOnce:        keptAtOnceFor(cfg.OneReplicaAtATime),
		otherVersions: versions, versionNames: versionNames, files: cfg.Files,
	}
	if e.healthTypes == nil {
		e.healthTypes = defaultHealthConditions
	}
	if !ok {
		return nil, errors.Join(errs...)
	}
	// Returned with what is wrong, so that the kept sequences' mistakes
	// can be reported with cfg's.
	return e, errors.Join(errs...)
}
