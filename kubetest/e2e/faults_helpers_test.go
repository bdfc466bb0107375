package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// The failure-injection tests run whole Apps with app.WithFaults and
// jsonscenario's codec against the shared cluster, in real time, each in
// a namespace and an API group of its own (installMemcached's), as the
// controller tests do. An experiment is started and ended as the spec's
// harness does it: a JSON merge patch of the Memcached's annotation.

// scenarioAnnotation is the annotation the tests' controllers trust.
const scenarioAnnotation = "acme.example.com/failure-scenario"

// scenarioMember is the baggage member of the tests' scenarios.
const scenarioMember = "acme.fault"

// experimentMaxDelay is the tests' Settings.RetryMaxDelay: short, so a
// scenario that keeps failing reaches it within a second or two.
const experimentMaxDelay = 500 * time.Millisecond

// scenarioCodec returns the App's Decoder: jsonscenario's, of
// scenarioMember.
func scenarioCodec(t *testing.T) *jsonscenario.Codec {
	t.Helper()
	codec, err := jsonscenario.New(scenarioMember)
	require.NoError(t, err)
	return codec
}

// annotationValue returns the value of an annotation that carries rules,
// as the tool that runs an experiment writes it: the W3C baggage that
// fit.ContextWithScenario leaves.
func annotationValue(t *testing.T, codec fit.Encoder, rules ...fit.Rule) string {
	t.Helper()
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: rules})
	require.NoError(t, err)
	return baggage.FromContext(ctx).String()
}

// setScenario starts or ends an experiment on the object name, as the
// spec's harness does: it sets the annotation to value with a JSON merge
// patch, or removes it when value is nil. Either reconciles the object at
// once.
func setScenario(t *testing.T, objects dynamic.ResourceInterface, name string, value any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{scenarioAnnotation: value}},
	})
	require.NoError(t, err)
	_, err = objects.Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// experimentSettings returns the Settings of a controller named name,
// limited to ns, with its Lease in ns: a short Lease (shortLease) and a
// short RetryMaxDelay, so the tests take seconds.
func experimentSettings(name, ns string) kube.Settings {
	s := kube.DefaultSettings()
	s.Name = name
	s.Namespace = ns
	s.RetryMaxDelay = experimentMaxDelay
	s.LeaderElection.Namespace = ns
	s.LeaderElection.Identity = name + "-0"
	shortLease(&s)
	return s
}

// inNamespace returns a trust func that trusts the objects in ns, as the
// spec's trusts those in staging.
func inNamespace(ns string) func(metav1.Object) bool {
	return func(obj metav1.Object) bool { return obj.GetNamespace() == ns }
}

// startExperiment runs a whole App on the real network, with failure
// injection reading scenarios with codec: its Init builds a Client of conn
// and the Services build returns.
func startExperiment(t *testing.T, conn kube.Connection, codec fit.Decoder, build func(s *app.Setup, client *kube.Client) ([]app.Service, error)) *apptest.App {
	t.Helper()
	return startExperimentWith(t, conn, fault.Settings{Decoder: codec}, build)
}

// startExperimentWith is startExperiment, with failure injection as
// settings say.
func startExperimentWith(t *testing.T, conn kube.Connection, settings fault.Settings, build func(s *app.Setup, client *kube.Client) ([]app.Service, error)) *apptest.App {
	t.Helper()
	a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
		client, err := kube.NewClient(s, conn)
		if err != nil {
			return nil, err
		}
		return build(s, client)
	}, apptest.WithAppOptions(app.WithHost(app.OSHost()), app.WithFaults(settings)))
	a.Setup()
	select {
	case <-a.Done():
		t.Fatalf("the App exited with %d: %s", a.Wait(), a.Stderr())
	default:
	}
	return a
}

// reconcileLog records the reconciles of an experiment's Reconciler.
type reconcileLog struct {
	mu      sync.Mutex
	entries []reconcileEntry
}

// reconcileEntry is one reconcile: when it began, the object's name and
// the revision it read, and what it returned.
type reconcileEntry struct {
	at       time.Time
	name     string
	revision int64
	err      error
}

func (l *reconcileLog) add(m memcachedObject, err error, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, reconcileEntry{at: at, name: m.Name, revision: revisionOf(m.ResourceVersion), err: err})
}

// saw reports whether a reconcile of name read it at revision or later.
func (l *reconcileLog) saw(name string, revision int64) bool {
	return slices.ContainsFunc(l.of(name), func(e reconcileEntry) bool { return e.revision >= revision })
}

// of returns name's reconciles, in order.
func (l *reconcileLog) of(name string) []reconcileEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var of []reconcileEntry
	for _, e := range l.entries {
		if e.name == name {
			of = append(of, e)
		}
	}
	return of
}

func (l *reconcileLog) count(name string) int { return len(l.of(name)) }

// experimentReconciler is the spec's Reconciler: it applies a Deployment
// the Memcached controls, and reports a failed apply as the ApplyFailed
// condition and an error together. It records each reconcile in log, and
// adds member, when set, to its context's baggage, as code of the end
// user's that sets baggage of its own does.
type experimentReconciler struct {
	kube   kubernetes.Interface
	log    *reconcileLog
	member *baggage.Member
}

func (r experimentReconciler) Reconcile(ctx context.Context, m memcachedObject) (kube.Result[memcachedStatus], error) {
	start := time.Now()
	if r.member != nil {
		b, err := baggage.FromContext(ctx).SetMember(*r.member)
		if err != nil {
			return kube.Result[memcachedStatus]{}, err
		}
		ctx = baggage.ContextWithBaggage(ctx, b)
	}
	_, err := r.kube.AppsV1().Deployments(m.Namespace).Apply(ctx, memcached.Deployment(m),
		metav1.ApplyOptions{FieldManager: "memcached-controller", Force: true})
	r.log.add(m, err, start)
	st := m.Status
	c := metav1.Condition{
		Type: "Available", Status: metav1.ConditionUnknown, Reason: "DeploymentPending",
		ObservedGeneration: m.Generation,
	}
	if err != nil {
		c.Reason, c.Message = "ApplyFailed", err.Error()
	}
	meta.SetStatusCondition(&st.Conditions, c)
	return kube.Result[memcachedStatus]{Status: &st}, err
}

// available returns the Memcached's Available condition, or nil.
func availableOf(t *testing.T, d dynamic.Interface, r kube.Resource[memcachedSpec, memcachedStatus], ns, name string) *metav1.Condition {
	t.Helper()
	m, ok := getMemcached(t, d, r, ns, name)
	if !ok {
		return nil
	}
	return meta.FindStatusCondition(m.Status.Conditions, "Available")
}

// evaluationsAt counts the loam.fit.evaluation events of the App's ended
// spans at point whose attributes met says are the ones to count.
func evaluationsAt(a *apptest.App, point string, met func(attribute.Set) bool) int {
	n := 0
	for _, s := range a.Telemetry().Spans() {
		for _, e := range s.Events {
			if e.Name != fault.EvaluationEvent {
				continue
			}
			attrs := attribute.NewSet(e.Attributes...)
			if p, _ := attrs.Value(fault.PointKey); p.AsString() == point && met(attrs) {
				n++
			}
		}
	}
	return n
}

// abortsAt counts the evaluations at point, on the App's ended spans,
// that met an abort.
func abortsAt(a *apptest.App, point string) int {
	return evaluationsAt(a, point, func(attrs attribute.Set) bool {
		abort, _ := attrs.Value(fault.AbortKey)
		return abort.AsBool()
	})
}

// events counts the events named name on the App's ended spans.
func events(a *apptest.App, name string) int {
	n := 0
	for _, s := range a.Telemetry().Spans() {
		for _, e := range s.Events {
			if e.Name == name {
				n++
			}
		}
	}
	return n
}

// wire is a recording proxy between a Client and the cluster: a TLS
// server of its own CA that keeps what each request carries — its method,
// path, query, content type, baggage header and, for a PATCH, its body —
// and passes the request on, as it came, to the cluster's API server. What
// it records is what the API server receives: the Client's TLS ends at the
// proxy, so nothing of the Client's is left to change a request after it.
// It is the module's one recording proxy: the fault tests read its
// baggage and bodies, the related-objects tests its ConfigMaps requests.
type wire struct {
	mu       sync.Mutex
	requests []wireRequest
}

type wireRequest struct {
	method, path, contentType string
	query                     url.Values
	baggage                   []string
	body                      []byte
	// finished is set when the API server's answer has ended: for a
	// watch, when it closed.
	finished bool
}

// String prints the request's method, path and query, for a failed
// assertion's message.
func (r wireRequest) String() string { return r.method + " " + r.path + "?" + fmt.Sprint(r.query) }

// isWatch reports whether r is a watch, as the informers' are.
func (r wireRequest) isWatch() bool {
	return slices.Contains(r.query["watch"], "true") || slices.Contains(r.query["watch"], "1")
}

// startWire starts the proxy to c's API server, and returns it and the
// Connection that reaches the cluster through it, with the admin's token.
// It stops when the test ends, after the Apps the test started later.
func startWire(t *testing.T, c *kubetest.Cluster) (*wire, kube.Connection) {
	t.Helper()
	w := &wire{}
	conn := startProxy(t, c, func(rw http.ResponseWriter, r *http.Request, next http.Handler) {
		i := w.record(r)
		next.ServeHTTP(rw, r)
		w.finish(i)
	})
	conn.Token = c.Connection().Token
	return w, conn
}

// startProxy starts a proxy in front of c's API server, and returns the
// Connection that reaches the cluster through it, with no Token. Each
// request goes to inspect, which passes it on, as it came, with next.
func startProxy(t *testing.T, c *kubetest.Cluster, inspect func(rw http.ResponseWriter, r *http.Request, next http.Handler)) kube.Connection {
	t.Helper()
	return c.Proxy(t, inspect).Connection()
}

// throughWire returns a Connection to c through a recording proxy, and,
// when the test ends, after the Apps it started, checks that the proxy
// passed requests on and that none of them carried the scenario's member
// in its baggage: every failure-injection test is also a test that no
// scenario reaches the API server.
func throughWire(t *testing.T, c *kubetest.Cluster) kube.Connection {
	t.Helper()
	_, conn := recordedWire(t, c)
	return conn
}

// recordedWire is throughWire, which also returns the proxy, to read what
// reached the API server.
func recordedWire(t *testing.T, c *kubetest.Cluster) (*wire, kube.Connection) {
	t.Helper()
	w, conn := startWire(t, c)
	t.Cleanup(func() {
		if len(w.all()) == 0 {
			t.Error("the recording proxy passed no request on: the App didn't reach the API server through it")
		}
		for _, req := range w.carryingScenario() {
			t.Errorf("%s %s carried the scenario to the API server: %s", req.method, req.path, req.baggage)
		}
	})
	return w, conn
}

// carryingScenario returns the requests whose baggage carried the
// scenario's member: none should, as the Client strips it.
func (w *wire) carryingScenario() []wireRequest {
	var carried []wireRequest
	for _, req := range w.all() {
		if slices.ContainsFunc(req.baggage, func(b string) bool { return strings.Contains(b, scenarioMember) }) {
			carried = append(carried, req)
		}
	}
	return carried
}

// record keeps r and returns its index, for finish.
func (w *wire) record(r *http.Request) int {
	req := wireRequest{
		method:      r.Method,
		path:        r.URL.Path,
		query:       r.URL.Query(),
		contentType: r.Header.Get("Content-Type"),
		baggage:     slices.Clone(r.Header.Values("Baggage")),
	}
	if r.Method == http.MethodPatch && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			req.body = body
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests = append(w.requests, req)
	return len(w.requests) - 1
}

// finish marks the i-th request's answer ended.
func (w *wire) finish(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.requests[i].finished = true
}

// all returns every request the proxy has passed on.
func (w *wire) all() []wireRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.requests)
}

// patchesOf returns the PATCHes of the path that ends in suffix.
func (w *wire) patchesOf(suffix string) []wireRequest {
	var p []wireRequest
	for _, r := range w.all() {
		if r.method == http.MethodPatch && strings.HasSuffix(r.path, suffix) {
			p = append(p, r)
		}
	}
	return p
}
