// Package kubetest runs a real Kubernetes control plane inside the test
// process: kube-apiserver, built from k8s.io/kubernetes as a library, on an
// embedded etcd, and optionally kube-controller-manager's garbage collector
// and ClusterRole aggregation. Nothing is downloaded and nothing runs in a
// container: the components are Go packages linked into the test binary,
// serving HTTPS on loopback ports.
//
// A test starts a cluster with Start, a program with Run, and a package of
// tests shares one through NewShared and a namespace per test:
//
//	c := kubetest.Start(t, kubetest.WithCRDs(crd))
//	ns := c.Namespace(t)
//	conn := c.Connection() // a kube.Connection for the cluster's admin
//
// The cluster authorizes with RBAC by default. WithUser declares users with
// static tokens and ServiceAccountToken mints ServiceAccount tokens, so a
// test can run a controller with no more permission than its documentation
// grants. StopAPIServer, StartAPIServer and Restart take the API server away
// and bring it back on the same address with the same data, for tests of
// how clients ride out an outage.
//
// # What runs, and what does not
//
// Only the API server (with its default admission plugins, which include
// ValidatingAdmissionPolicy), etcd and, with WithControllerManager, two
// controllers run unless asked. There is no scheduler, kubelet, Deployment
// or namespace controller: a Deployment gets no ReplicaSet, a Pod is never
// scheduled and a deleted namespace stays Terminating.
//
// WithWorkloadControllers adds Kubernetes' Deployment, ReplicaSet and
// StatefulSet controllers, and WithFakeKubelet a fake kubelet of
// kubetest's own (package kubetest/kubelet), which registers a Node, binds
// Pods to it and makes them Running and Ready without running a
// container, or never ready, crash-looping or partly ready, as the
// annotation kubelet.FaultAnnotation on a Pod or its namespace says. With
// both, the children of an operator come alive, and it can be tested
// waiting on them.
//
// # Process globals
//
// The Kubernetes components keep some state in process globals, and
// kubetest is the one package of loam allowed to touch them:
//
//   - klog. The first cluster installs a logger as klog's global logger
//     and sets klog's verbosity. It sends the components' log lines to the
//     writers of the running clusters' WithLogs options, and drops them
//     when there is none. Programs that configure klog themselves should do
//     so before starting a cluster and expect kubetest to take it over.
//   - Feature gates. Each API server and controller manager gets its own
//     copy of the feature gates and its own component-version registry, but
//     much of Kubernetes, the API server's storage layer among it, reads the
//     process-wide default gate. WithFeatureGates therefore sets its gates
//     on that global as well as on the server's copy: every cluster in the
//     process then has them, and they stay set after Stop. A test that
//     changes a gate itself (featuregatetesting) does the same. Tests that
//     need gates other than the defaults belong in a test package of their
//     own and must not run in parallel with tests that need the defaults.
//   - Metrics. The API servers and controller managers register their
//     Prometheus metrics in component-base's process-wide legacy registry,
//     and every API server serves the whole registry at /metrics: while
//     several clusters run, each one's /metrics counts them all together.
//
// Everything else a cluster starts belongs to it and ends with Stop:
// goroutines (GoleakOptions lists the two kinds of Kubernetes goroutine that
// outlive it), ports, file descriptors and its temporary directory.
//
// # Module
//
// k8s.io/kubernetes requires its staging modules (k8s.io/api,
// k8s.io/apiserver, ...) at version v0.0.0, so a module that imports kubetest
// needs the same replace directives as kubetest's own go.mod; see
// docs/testing.md. Linking the API server makes a test binary about 180 MB;
// keep the tests that use it in few packages.
package kubetest
