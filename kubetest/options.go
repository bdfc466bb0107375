package kubetest

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	"github.com/loam-dev/loam/kubetest/kubelet"
)

// Authorization is the authorization mode of a cluster's API server.
type Authorization string

const (
	// RBAC authorizes requests by Roles, ClusterRoles and their bindings,
	// as a production cluster does. It is the default.
	RBAC Authorization = "RBAC"
	// AlwaysAllow lets every authenticated request through. As in a real
	// kube-apiserver in this mode, the bootstrap ClusterRoles and bindings
	// (cluster-admin, view, system:*) are not created.
	AlwaysAllow Authorization = "AlwaysAllow"
)

// Option configures a cluster started by Start, Run or NewShared.
type Option func(*settings)

// settings is what the options set; check reports every mistake at once.
type settings struct {
	authorization     Authorization
	users             []user
	controllerManager bool
	workloads         bool            // WithWorkloadControllers
	kubelet           *kubelet.Config // WithFakeKubelet's, nil without it
	crds              []*apiextensionsv1.CustomResourceDefinition
	logs              io.Writer
	verbosity         int
	featureGates      map[string]bool
}

func newSettings(opts []Option) (settings, error) {
	s := settings{authorization: RBAC}
	for _, opt := range opts {
		if opt != nil {
			opt(&s)
		}
	}
	return s, s.check()
}

// WithAuthorization sets the API server's authorization mode: RBAC (the
// default) or AlwaysAllow.
func WithAuthorization(mode Authorization) Option {
	return func(s *settings) { s.authorization = mode }
}

// WithUser declares a user that authenticates with a static bearer token
// and belongs to groups (besides system:authenticated, which every
// authenticated user is in). The user has no permission until a test binds
// a Role or ClusterRole to it or to one of its groups. Cluster.ConnectionFor
// and Cluster.RESTConfigFor return its credentials.
//
// To act as a ServiceAccount without the TokenRequest API, declare its
// user name and groups: WithUser("system:serviceaccount:ns:name", token,
// "system:serviceaccounts", "system:serviceaccounts:ns").
func WithUser(name, token string, groups ...string) Option {
	return func(s *settings) {
		s.users = append(s.users, user{name: name, token: token, groups: append([]string(nil), groups...)})
	}
}

// WithControllerManager runs kube-controller-manager in the same process
// with two controllers: the garbage collector (owner references cascade)
// and ClusterRole aggregation (the view, edit and admin ClusterRoles get
// their rules). No other controller runs: no Deployment makes a
// ReplicaSet, no namespace is emptied when deleted.
//
// The controller manager starts after the CRDs of WithCRDs are installed,
// so the garbage collector watches their objects from the start. It looks
// for resources installed later, by Cluster.InstallCRDs or any client,
// every GarbageCollectorDiscoveryPeriod (kube-controller-manager's own
// collector every 30 seconds), so an object of a kind installed later is
// collected within GarbageCollectorCollectionBound of its owner's
// deletion.
//
// Several clusters of one process may each run a controller manager at
// once, each with controllers, informers and events of its own. What they
// share is global to the process in Kubernetes itself: klog (WithLogs),
// the feature gates (WithFeatureGates), and the Prometheus metrics of
// component-base's legacy registry: every API server of the process
// serves them all at /metrics, so they count every cluster's controllers
// together.
func WithControllerManager() Option {
	return func(s *settings) { s.controllerManager = true }
}

// WithWorkloadControllers runs kube-controller-manager, as
// WithControllerManager does, with three more of its controllers:
// Deployment, ReplicaSet and StatefulSet. A Deployment then makes a
// ReplicaSet, a ReplicaSet and a StatefulSet make Pods, and each reports
// its replicas and conditions (a Deployment's Available and Progressing)
// from its Pods' readiness, as in a real cluster.
//
// No Pod runs without a kubelet: add WithFakeKubelet, or the Pods stay
// Pending and the Deployments unavailable. DaemonSet, Job, EndpointSlice,
// namespace and node controllers do not run.
//
// It is a controller manager, so what WithControllerManager says of one
// holds: several clusters of a process may each run one at once. A Shared
// cluster is what its options make it, and nothing else: a package whose
// tests need workload controllers makes its own NewShared with this
// option, and does not share it with tests that write Deployment status
// themselves, which the Deployment controller would overwrite.
func WithWorkloadControllers() Option {
	return func(s *settings) { s.workloads = true }
}

// WithFakeKubelet runs kubetest's fake kubelet (package
// kubetest/kubelet) in the cluster, configured by cfg (its zero value
// takes the defaults), and stops it first at Stop. It registers a Node,
// binds every unscheduled Pod to it, and makes the Pods Running and Ready
// after cfg.ReadyAfter, unless a fault chosen by the annotation
// kubelet.FaultAnnotation, on the Pod or on its namespace, makes them never
// ready, crash-loop, or ready only in part. No container runs: there are
// no probes, no volumes, no logs. With WithWorkloadControllers, the Pods of
// Deployments, ReplicaSets and StatefulSets come alive, so an operator
// that waits on them can be tested.
func WithFakeKubelet(cfg kubelet.Config) Option {
	return func(s *settings) { s.kubelet = &cfg }
}

// WithCRDs installs CustomResourceDefinitions as part of starting the
// cluster, before the controller manager, and waits until each is
// Established.
func WithCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(s *settings) { s.crds = append(s.crds, crds...) }
}

// WithLogs writes the logs of the API server, etcd and the controller
// manager to w. Without it they are discarded. In a test, pass t.Output().
//
// klog, which the Kubernetes components log through, is global to the
// process: while several clusters run, w receives the lines of all of them.
func WithLogs(w io.Writer) Option {
	return func(s *settings) { s.logs = w }
}

// WithVerbosity sets the klog verbosity of the logs WithLogs writes (the -v
// of the Kubernetes binaries, 0 by default). It is global to the process:
// while several clusters run, the highest verbosity among them applies.
func WithVerbosity(level int) Option {
	return func(s *settings) { s.verbosity = level }
}

// WithFeatureGates starts the API server with the feature gates turned on
// (true) or off (false), as kube-apiserver's --feature-gates flag would:
//
//	kubetest.NewShared(kubetest.WithFeatureGates(map[string]bool{"ShardedListAndWatch": true}))
//
// It sets the process's global feature gate too, and that is the catch.
// Parts of the API server, its storage layer among them, read the
// process-wide default gate (k8s.io/apiserver/pkg/util/feature) rather than
// the server's own copy, so a gate set on the server alone would leave them
// as they were. So each start of the API server (Run, StartAPIServer,
// Restart) first sets these gates on the global, and from then on:
//
//   - every cluster in the process shares them, those started before and
//     those started after, with or without this option;
//   - they stay set after the cluster stops: nothing puts them back.
//
// Tests that use it therefore live in a package of their own (a test binary
// of their own) and must not run in parallel with tests that need the
// default gates. Run reports a gate this Kubernetes does not know, or one
// it will not set to the value asked (a gate locked to its default, or one
// that needs another gate that is off), with the other option mistakes.
// The option keeps a copy of gates; several WithFeatureGates add up, the
// later winning for a gate named twice.
func WithFeatureGates(gates map[string]bool) Option {
	gates = maps.Clone(gates)
	return func(s *settings) {
		if s.featureGates == nil {
			s.featureGates = map[string]bool{}
		}
		maps.Copy(s.featureGates, gates)
	}
}

func (s settings) check() error {
	var errs []error
	switch s.authorization {
	case RBAC, AlwaysAllow:
	default:
		errs = append(errs, fmt.Errorf("authorization %q: want %q or %q", s.authorization, RBAC, AlwaysAllow))
	}
	if s.verbosity < 0 {
		errs = append(errs, fmt.Errorf("verbosity %d: must not be negative", s.verbosity))
	}
	names := map[string]bool{AdminUser: true, controllerManagerUser: true}
	tokens := map[string]string{}
	for i, u := range s.users {
		where := fmt.Sprintf("user %d (%q)", i, u.name)
		if err := checkTokenField(u.name); err != nil {
			errs = append(errs, fmt.Errorf("%s: name: %w", where, err))
		} else if names[u.name] {
			errs = append(errs, fmt.Errorf("%s: name: already taken", where))
		}
		names[u.name] = true
		if err := checkTokenField(u.token); err != nil {
			errs = append(errs, fmt.Errorf("%s: token: %w", where, err))
		} else if other, ok := tokens[u.token]; ok {
			errs = append(errs, fmt.Errorf("%s: token: already the token of user %q", where, other))
		}
		tokens[u.token] = u.name
		for j, g := range u.groups {
			if err := checkTokenField(g); err != nil {
				errs = append(errs, fmt.Errorf("%s: group %d: %w", where, j, err))
			}
		}
	}
	for i, crd := range s.crds {
		if crd == nil {
			errs = append(errs, fmt.Errorf("CRD %d: is nil", i))
		}
	}
	if s.kubelet != nil {
		if err := s.kubelet.Check(); err != nil {
			errs = append(errs, fmt.Errorf("fake kubelet: %w", err))
		}
	}
	errs = append(errs, checkFeatureGates(s.featureGates)...)
	return errors.Join(errs...)
}

// checkFeatureGates reports each gate of WithFeatureGates that the process's
// global feature gate does not know or will not set to the value asked.
// It tries them on a copy of the global: setting the global itself would
// keep the names even when it fails.
func checkFeatureGates(gates map[string]bool) []error {
	if len(gates) == 0 {
		return nil
	}
	global := utilfeature.DefaultMutableFeatureGate
	known := global.GetAll()
	var errs []error
	valid := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		on := gates[name]
		spec, ok := known[featuregate.Feature(name)]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("feature gate %q: unknown to Kubernetes %s", name, global.EmulationVersion()))
		case spec.LockToDefault && spec.Default != on:
			errs = append(errs, fmt.Errorf("feature gate %q: cannot be set to %t, it is locked to %t", name, on, spec.Default))
		default:
			valid[name] = on
		}
	}
	// What can still fail is a gate that needs another one that is off.
	if err := global.DeepCopy().SetFromMap(valid); err != nil {
		errs = append(errs, fmt.Errorf("feature gates %v: %w", slices.Sorted(maps.Keys(valid)), err))
	}
	return errs
}

// checkTokenField reports whether v can stand in a field of the static
// token file, a CSV file with quoted group lists.
func checkTokenField(v string) error {
	switch {
	case v == "":
		return errors.New("is empty")
	case strings.ContainsAny(v, ",\"\\\r\n"):
		return fmt.Errorf("%q contains a comma, quote, backslash or line break", v)
	case strings.TrimSpace(v) != v:
		return fmt.Errorf("%q has leading or trailing space", v)
	}
	return nil
}
