package kube_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/internal/reconciled"
	"github.com/loam-dev/loam/kube"
)

// memcacheds is the resource of the spec's example operator.
var memcacheds = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}

const (
	scenarioMember     = "acme.fault"
	scenarioAnnotation = "acme.example.com/failure-scenario"
	ownerUID           = types.UID("memcached-uid")
	injectedErrorType  = "github.com/loam-dev/loam/app/fault.InjectedError"
)

// sent is one request as the API server received it.
type sent struct {
	Method, Path, ContentType string
	Baggage                   []string
	Traceparent               string
	Body                      []byte
	At                        time.Time
}

// recordingAPI stands in for the API server: it records every request it
// receives, streams a watch until the request ends, and answers every other
// request with a Status of success, which every client-go call decodes
// without error.
type recordingAPI struct {
	mu       sync.Mutex
	received []sent
}

func (a *recordingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.received = append(a.received, sent{
		Method:      r.Method,
		Path:        r.URL.Path,
		ContentType: r.Header.Get("Content-Type"),
		Baggage:     r.Header.Values("Baggage"),
		Traceparent: r.Header.Get("Traceparent"),
		Body:        body,
		At:          time.Now(),
	})
	a.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":200}`)
}

func (a *recordingAPI) requests() []sent {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]sent(nil), a.received...)
}

// faultEnv is a Client of an App with failure injection, on a test Host,
// reaching a recordingAPI over TLS. Build it inside a synctest bubble.
type faultEnv struct {
	api    *recordingAPI
	tel    *apptest.Telemetry
	codec  *jsonscenario.Codec
	faults *fault.Injector
	client *kube.Client
	kc     kubernetes.Interface
	tokens *atomic.Int32 // how many times Connection.Token was called
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	h, ca, tel := apptest.NewHost(t), apptest.NewCA(t), apptest.NewTelemetry()
	api := &recordingAPI{}
	ln, err := h.Listen(t.Context(), "tcp", "api.test:443")
	require.NoError(t, err)
	srv := &http.Server{Handler: api, TLSConfig: ca.ServerConfig("api.test"), ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeTLS(ln, "", "")
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})

	codec, err := jsonscenario.New(scenarioMember)
	require.NoError(t, err)
	faults, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(t, err)
	tokens := &atomic.Int32{}
	client := newClient(t, &app.Setup{Host: h.Host(), Telemetry: tel.Telemetry, Faults: faults}, kube.Connection{
		Server: "api.test:443",
		TLS:    &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		Token: func(context.Context) (string, error) {
			tokens.Add(1)
			return "token", nil
		},
	})
	kc, err := kubernetes.NewForConfig(client.Config())
	require.NoError(t, err)
	return &faultEnv{api: api, tel: tel, codec: codec, faults: faults, client: client, kc: kc, tokens: tokens}
}

// with returns ctx carrying a scenario of rules.
func (e *faultEnv) with(ctx context.Context, t *testing.T, rules ...fit.Rule) context.Context {
	t.Helper()
	ctx, err := fit.ContextWithScenario(ctx, e.codec, fit.Scenario{Rules: rules})
	require.NoError(t, err)
	return ctx
}

// span starts a span on the App's tracer, as a reconcile's.
func (e *faultEnv) span(ctx context.Context, name string) (context.Context, func()) {
	ctx, span := e.tel.TracerProvider.Tracer("test").Start(ctx, name)
	return ctx, func() { span.End() }
}

// withMember returns ctx with the baggage member key=value added.
func withMember(ctx context.Context, t *testing.T, key, value string) context.Context {
	t.Helper()
	m, err := baggage.NewMember(key, value)
	require.NoError(t, err)
	b, err := baggage.FromContext(ctx).SetMember(m)
	require.NoError(t, err)
	return baggage.ContextWithBaggage(ctx, b)
}

// evaluatedPoints returns the point of every loam.fit.evaluation event on
// spans, in the order the spans ended.
func evaluatedPoints(spans []tracetest.SpanStub) []string {
	var points []string
	for _, s := range spans {
		for _, ev := range eventsNamed(s, fault.EvaluationEvent) {
			points = append(points, attr(ev.Attributes, fault.PointKey))
		}
	}
	return points
}

func eventsNamed(s tracetest.SpanStub, name string) []sdktrace.Event {
	var named []sdktrace.Event
	for _, ev := range s.Events {
		if ev.Name == name {
			named = append(named, ev)
		}
	}
	return named
}

func attr(attrs []attribute.KeyValue, key attribute.Key) string {
	for _, kv := range attrs {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

func TestClient_names_every_request_by_its_injection_point(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := e.with(t.Context(), t) // a scenario of no rules: every point evaluated, none fails
		dyn, err := dynamic.NewForConfig(e.client.Config())
		require.NoError(t, err)
		disco, err := discovery.NewDiscoveryClientForConfig(e.client.Config())
		require.NoError(t, err)
		cms, deps := e.kc.CoreV1().ConfigMaps("ns"), e.kc.AppsV1().Deployments("ns")
		apply := metav1.ApplyOptions{FieldManager: "test"}

		tests := []struct {
			name string
			call func(ctx context.Context) error
			want string
		}{
			{"clientset Get", func(ctx context.Context) error { _, err := cms.Get(ctx, "c", metav1.GetOptions{}); return err }, "kube:configmaps:get"},
			{"clientset List", func(ctx context.Context) error { _, err := cms.List(ctx, metav1.ListOptions{}); return err }, "kube:configmaps:list"},
			{"clientset Watch", func(ctx context.Context) error {
				w, err := cms.Watch(ctx, metav1.ListOptions{})
				if err == nil {
					w.Stop()
				}
				return err
			}, "kube:configmaps:watch"},
			{"clientset Create", func(ctx context.Context) error {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
				return err
			}, "kube:configmaps:create"},
			{"clientset Update", func(ctx context.Context) error {
				_, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.UpdateOptions{})
				return err
			}, "kube:configmaps:update"},
			{"clientset Patch", func(ctx context.Context) error {
				_, err := cms.Patch(ctx, "c", types.MergePatchType, []byte(`{"data":{"a":"b"}}`), metav1.PatchOptions{})
				return err
			}, "kube:configmaps:patch"},
			{"clientset Apply", func(ctx context.Context) error {
				_, err := cms.Apply(ctx, corev1ac.ConfigMap("c", "ns"), apply)
				return err
			}, "kube:configmaps:patch"},
			{"clientset Delete", func(ctx context.Context) error { return cms.Delete(ctx, "c", metav1.DeleteOptions{}) }, "kube:configmaps:delete"},
			{"clientset DeleteCollection", func(ctx context.Context) error {
				return cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			}, "kube:configmaps:deletecollection"},
			{"grouped Apply", func(ctx context.Context) error {
				_, err := deps.Apply(ctx, appsv1ac.Deployment("d", "ns"), apply)
				return err
			}, "kube:deployments.apps:patch"},
			{"status apply", func(ctx context.Context) error {
				_, err := deps.ApplyStatus(ctx, appsv1ac.Deployment("d", "ns"), apply)
				return err
			}, "kube:deployments.apps/status:patch"},
			{"scale subresource", func(ctx context.Context) error { _, err := deps.GetScale(ctx, "d", metav1.GetOptions{}); return err }, "kube:deployments.apps/scale:get"},
			{"eviction subresource", func(ctx context.Context) error {
				return e.kc.PolicyV1().Evictions("ns").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}})
			}, "kube:pods/eviction:create"},
			{"proxy subresource", func(ctx context.Context) error {
				_, err := e.kc.CoreV1().Services("ns").ProxyGet("http", "s", "8080", "metrics", nil).DoRaw(ctx)
				return err
			}, "kube:services/proxy:get"},
			{"cluster-scoped Get", func(ctx context.Context) error {
				_, err := e.kc.CoreV1().Namespaces().Get(ctx, "foo", metav1.GetOptions{})
				return err
			}, "kube:namespaces:get"},
			{"a namespace's subresource", func(ctx context.Context) error {
				_, err := e.kc.CoreV1().Namespaces().Finalize(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "foo"}}, metav1.UpdateOptions{})
				return err
			}, "kube:namespaces/finalize:update"},
			{"cluster-scoped grouped List", func(ctx context.Context) error {
				_, err := e.kc.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
				return err
			}, "kube:clusterroles.rbac.authorization.k8s.io:list"},
			{"dynamic Apply", func(ctx context.Context) error {
				u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": map[string]any{"name": "m"}}}
				_, err := dyn.Resource(memcacheds).Namespace("ns").Apply(ctx, "m", u, apply)
				return err
			}, "kube:memcacheds.cache.example.com:patch"},
			{"dynamic status Apply", func(ctx context.Context) error {
				u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "metadata": map[string]any{"name": "m"}}}
				_, err := dyn.Resource(memcacheds).Namespace("ns").ApplyStatus(ctx, "m", u, apply)
				return err
			}, "kube:memcacheds.cache.example.com/status:patch"},
			{"discovery's server version", func(ctx context.Context) error { _, err := disco.ServerVersionWithContext(ctx); return err }, "kube:/version:get"},
			{"discovery's groups", func(ctx context.Context) error { _, err := disco.ServerGroupsWithContext(ctx); return err }, "kube:/api:get kube:/apis:get"},
			{"a non-resource path", func(ctx context.Context) error {
				_, err := e.kc.Discovery().RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
				return err
			}, "kube:/openapi/v3:get"},
		}
		requests := 0
		for _, tt := range tests {
			before := len(evaluatedPoints(e.tel.Spans()))
			reqCtx, end := e.span(ctx, "reconcile")
			require.NoError(t, tt.call(reqCtx), tt.name)
			end()
			want := strings.Fields(tt.want)
			require.Equal(t, want, evaluatedPoints(e.tel.Spans())[before:], tt.name)
			requests += len(want)
		}
		require.Len(t, e.api.requests(), requests, "a scenario of no rules fails nothing")
	})
}

func TestClient_abort_sends_nothing_and_never_calls_Token(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := e.with(t.Context(), t, fit.Rule{Point: "kube:configmaps:*", Fault: fit.Fault{Abort: true}})

		_, err := e.kc.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
		var injected *fault.InjectedError
		require.ErrorAs(t, err, &injected, "client-go returns an error that wraps the *fault.InjectedError")
		require.Equal(t, "kube:configmaps:create", injected.Point)
		require.Empty(t, e.api.requests(), "nothing reached the API server")
		require.Zero(t, e.tokens.Load(), "Connection.Token was never called")

		spans := e.tel.SpansNamed("POST")
		require.Len(t, spans, 1)
		require.Equal(t, injectedErrorType, attr(spans[0].Attributes, "error.type"))
		require.Equal(t, []string{"kube:configmaps:create"}, evaluatedPoints(spans))
		m, err := e.tel.Metric(t.Context(), "http.client.request.duration")
		require.NoError(t, err)
		hist, ok := m.Data.(metricdata.Histogram[float64])
		require.True(t, ok)
		require.Len(t, hist.DataPoints, 1)
		require.Equal(t, uint64(1), hist.DataPoints[0].Count, "http.client.request.duration counts the aborted request")
		errType, _ := hist.DataPoints[0].Attributes.Value("error.type")
		require.Equal(t, injectedErrorType, errType.AsString(), "the metric names the error as the span does")
	})
}

func TestClient_a_GET_aborted_once_is_not_retried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := e.with(t.Context(), t, fit.Rule{Point: "kube:configmaps:get", Fault: fit.Fault{Abort: true}, Count: 1})
		cms := e.kc.CoreV1().ConfigMaps("ns")

		_, err := cms.Get(ctx, "c", metav1.GetOptions{})
		var injected *fault.InjectedError
		require.ErrorAs(t, err, &injected)
		require.Empty(t, e.api.requests(), "client-go did not retry the GET")
		require.Len(t, evaluatedPoints(e.tel.Spans()), 1, "one evaluation: one attempt")

		_, err = cms.Get(ctx, "c", metav1.GetOptions{})
		require.NoError(t, err, "the rule's one abort is spent")
		require.Len(t, e.api.requests(), 1)
		require.Len(t, evaluatedPoints(e.tel.Spans()), 2)
	})
}

func TestClient_delay_is_waited_before_the_request_inside_its_span(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := e.with(t.Context(), t, fit.Rule{Point: "kube:configmaps:get", Fault: fit.Fault{Delay: 3 * time.Second}})
		start := time.Now()
		_, err := e.kc.CoreV1().ConfigMaps("ns").Get(ctx, "c", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, 3*time.Second, time.Since(start))
		received := e.api.requests()
		require.Len(t, received, 1)
		require.Equal(t, start.Add(3*time.Second), received[0].At, "the request was sent once the delay was over")

		spans := e.tel.SpansNamed("GET")
		require.Len(t, spans, 1)
		require.GreaterOrEqual(t, spans[0].EndTime.Sub(spans[0].StartTime), 3*time.Second, "the delay is inside the request's span")
		m, err := e.tel.Metric(t.Context(), "http.client.request.duration")
		require.NoError(t, err)
		hist, ok := m.Data.(metricdata.Histogram[float64])
		require.True(t, ok)
		require.Len(t, hist.DataPoints, 1)
		require.GreaterOrEqual(t, hist.DataPoints[0].Sum, 3.0, "and in http.client.request.duration")
	})
}

func TestClient_delay_cut_short_by_the_requests_context(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := e.with(t.Context(), t, fit.Rule{Point: "kube:configmaps:get", Fault: fit.Fault{Delay: time.Minute}})
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start := time.Now()
		_, err := e.kc.CoreV1().ConfigMaps("ns").Get(ctx, "c", metav1.GetOptions{})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var injected *fault.InjectedError
		require.ErrorAs(t, err, &injected)
		require.ErrorIs(t, injected, context.DeadlineExceeded, "the InjectedError wraps the context's cause")
		require.Equal(t, time.Second, time.Since(start))
		require.Empty(t, e.api.requests())
		require.Equal(t, injectedErrorType, attr(e.tel.SpansNamed("GET")[0].Attributes, "error.type"))
	})
}

func TestClient_delay_cut_short_by_a_rest_Config_Timeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		cfg := e.client.Config()
		cfg.Timeout = time.Second
		kc, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		ctx := e.with(t.Context(), t, fit.Rule{Point: "kube:configmaps:get", Fault: fit.Fault{Delay: time.Minute}})
		start := time.Now()
		_, err = kc.CoreV1().ConfigMaps("ns").Get(ctx, "c", metav1.GetOptions{})
		// Two timers go off at once: client-go's deadline on the request's
		// context, and the http.Client's Timeout, whose own error net/http
		// may put in place of the InjectedError. Either is a timeout.
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, time.Second, time.Since(start))
		require.Empty(t, e.api.requests())
		spans := e.tel.SpansNamed("GET")
		require.Len(t, spans, 1)
		require.Equal(t, injectedErrorType, attr(spans[0].Attributes, "error.type"), "whichever error the request returned")
	})
}

func TestClient_strips_the_scenario_from_the_baggage_it_sends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx := withMember(t.Context(), t, "tenant", "a")
		ctx = e.with(ctx, t)
		ctx = withMember(ctx, t, "region", "eu")
		_, err := e.kc.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)

		received := e.api.requests()
		require.Len(t, received, 1)
		require.Len(t, received[0].Baggage, 1)
		got, err := baggage.Parse(received[0].Baggage[0])
		require.NoError(t, err)
		require.Equal(t, 2, got.Len(), "every other member is sent: %s", got)
		require.Equal(t, "a", got.Member("tenant").Value())
		require.Equal(t, "eu", got.Member("region").Value())
		require.Empty(t, got.Member(scenarioMember).Key(), "the scenario is not sent")
		require.NotEmpty(t, received[0].Traceparent, "the trace context is sent")

		spans := e.tel.SpansNamed("GET")
		require.Len(t, spans, 1)
		require.Equal(t, received[0].Traceparent[3:35], spans[0].SpanContext.TraceID().String())
		var names []string
		for _, ev := range spans[0].Events {
			names = append(names, ev.Name)
		}
		require.Equal(t, []string{fault.EvaluationEvent, fault.StripEvent}, names)
	})
}

func TestClient_evaluates_and_strips_nothing_for_a_request_without_a_scenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx, end := e.span(withMember(t.Context(), t, "tenant", "a"), "reconcile")
		_, err := e.kc.CoreV1().ConfigMaps("ns").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		w, err := e.kc.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		w.Stop()
		end()

		spans := e.tel.Spans()
		require.Len(t, spans, 2)
		for _, s := range spans {
			require.Empty(t, s.Events, "span %s", s.Name)
		}
		received := e.api.requests()
		require.Len(t, received, 2)
		require.Equal(t, []string{"tenant=a"}, received[0].Baggage)
	})
}

func TestClient_a_watchs_evaluation_lands_on_the_span_in_its_context(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx, end := e.span(e.with(t.Context(), t), "reconcile")
		w, err := e.kc.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		w.Stop()
		end()

		spans := e.tel.Spans()
		require.Len(t, spans, 1, "a watch has no span of its own")
		require.Equal(t, "reconcile", spans[0].Name)
		require.Equal(t, []string{"kube:configmaps:watch"}, evaluatedPoints(spans))
	})
}

// reconcile returns ctx as a reconcile of the Memcached with ownerUID that
// carries a scenario of rules, marked as the controller marks it, with
// another member of baggage besides, and the annotation value a child of
// it gets: the scenario's member alone.
func (e *faultEnv) reconcile(ctx context.Context, t *testing.T, rules ...fit.Rule) (context.Context, string) {
	t.Helper()
	ctx = withMember(ctx, t, "tenant", "a")
	ctx = e.with(ctx, t, rules...)
	value := baggage.FromContext(ctx).Member(scenarioMember).String()
	return reconciled.WithObject(ctx, ownerUID, scenarioAnnotation, baggage.FromContext(ctx)), value
}

// childOf returns the apply configuration of a Deployment whose owner
// reference names uid, as a controller or not, with a stale value of the
// scenario's annotation and one other annotation.
func childOf(uid types.UID, controller bool) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment("cache", "ns").
		WithAnnotations(map[string]string{scenarioAnnotation: "stale", "keep": "me"}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion("cache.example.com/v1alpha1").WithKind("Memcached").WithName("cache").
			WithUID(uid).WithController(controller)).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(2))
}

// childDeployment is childOf(ownerUID, true) as a typed Deployment.
func childDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "cache", Namespace: "ns",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(
				&metav1.ObjectMeta{Name: "cache", UID: ownerUID},
				schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"})},
		},
	}
}

// sentObject decodes the JSON body of a request the API server received.
func sentObject(t *testing.T, s sent) map[string]any {
	t.Helper()
	var obj map[string]any
	require.NoError(t, json.Unmarshal(s.Body, &obj), "the body is JSON: %s", s.Body)
	return obj
}

func annotationsOf(obj map[string]any) map[string]any {
	meta, _ := obj["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	return annotations
}

func TestClient_sets_the_scenario_on_each_child_a_reconcile_applies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx, value := e.reconcile(t.Context(), t)
		dyn, err := dynamic.NewForConfig(e.client.Config())
		require.NoError(t, err)
		apply := metav1.ApplyOptions{FieldManager: "memcached"}

		// A child applied with the clientset, made in a context derived
		// from the reconcile's.
		derived, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		_, err = e.kc.AppsV1().Deployments("ns").Apply(derived, childOf(ownerUID, true), apply)
		require.NoError(t, err)
		// A child applied with the dynamic client.
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cache", "ownerReferences": []any{map[string]any{
				"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "cache", "uid": string(ownerUID), "controller": true,
			}}},
			"data": map[string]any{"n": "1"},
		}}
		_, err = dyn.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("ns").Apply(ctx, "cache", u, apply)
		require.NoError(t, err)
		// A child's apply in YAML, sent on as JSON.
		yamlBody := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cache\n  ownerReferences:\n  - apiVersion: cache.example.com/v1alpha1\n    kind: Memcached\n    name: cache\n    uid: " + string(ownerUID) + "\n    controller: true\nstringData:\n  k: v\n"
		err = e.kc.CoreV1().RESTClient().Patch(types.ApplyPatchType).Namespace("ns").Resource("secrets").Name("cache").
			Param("fieldManager", "memcached").Body([]byte(yamlBody)).Do(ctx).Error()
		require.NoError(t, err)

		received := e.api.requests()
		require.Len(t, received, 3)
		for _, r := range received {
			require.Equal(t, "application/apply-patch+yaml", r.ContentType, r.Path)
			require.Equal(t, []string{"tenant=a"}, r.Baggage, "%s: the scenario isn't in the request's baggage", r.Path)
		}

		deployment := sentObject(t, received[0])
		require.Equal(t, map[string]any{scenarioAnnotation: value, "keep": "me"}, annotationsOf(deployment),
			"the scenario's members replace the body's value; other annotations stay")
		require.Equal(t, map[string]any{"replicas": float64(2)}, deployment["spec"])

		configMap := sentObject(t, received[1])
		require.Equal(t, map[string]any{scenarioAnnotation: value}, annotationsOf(configMap))
		require.Equal(t, map[string]any{"n": "1"}, configMap["data"])

		secret := sentObject(t, received[2])
		require.Equal(t, map[string]any{scenarioAnnotation: value}, annotationsOf(secret))
		require.Equal(t, map[string]any{"k": "v"}, secret["stringData"])

		got, err := baggage.Parse(value)
		require.NoError(t, err)
		require.Equal(t, 1, got.Len(), "only the scenario's member, not the reconcile's other baggage")
		_, err = e.faults.ScenarioFromBaggage(value)
		require.NoError(t, err, "the child's controller reads the scenario back")
	})
}

func TestClient_an_aborted_apply_of_a_child_sends_nothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newFaultEnv(t)
		ctx, _ := e.reconcile(t.Context(), t, fit.Rule{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}})
		_, err := e.kc.AppsV1().Deployments("ns").Apply(ctx, childOf(ownerUID, true), metav1.ApplyOptions{FieldManager: "memcached"})
		var injected *fault.InjectedError
		require.ErrorAs(t, err, &injected)
		require.Empty(t, e.api.requests())
	})
}

func TestClient_leaves_requests_that_arent_a_childs_apply_as_they_are(t *testing.T) {
	// The body each call sends in a reconcile that carries a scenario is
	// the body it sends with no scenario at all.
	withBody := func(kc kubernetes.Interface, pt types.PatchType, body []byte) func(context.Context) error {
		return func(ctx context.Context) error {
			return kc.AppsV1().RESTClient().Patch(pt).Namespace("ns").Resource("deployments").Name("cache").
				Param("fieldManager", "memcached").Body(body).Do(ctx).Error()
		}
	}
	apply := metav1.ApplyOptions{FieldManager: "memcached"}
	tests := []struct {
		name string
		ctx  func(e *faultEnv, t *testing.T) context.Context
		call func(e *faultEnv, t *testing.T) func(context.Context) error
	}{
		{"an apply in a context without a scenario", func(e *faultEnv, t *testing.T) context.Context {
			_, value := e.reconcile(t.Context(), t)
			b, err := baggage.Parse(value)
			require.NoError(t, err)
			return reconciled.WithObject(t.Context(), ownerUID, scenarioAnnotation, b)
		}, nil},
		{"an apply in a reconcile that carries no scenario", func(e *faultEnv, t *testing.T) context.Context {
			return reconciled.WithObject(e.with(t.Context(), t), ownerUID, scenarioAnnotation, baggage.Baggage{})
		}, nil},
		{"an apply outside a reconcile", func(e *faultEnv, t *testing.T) context.Context {
			return e.with(t.Context(), t)
		}, nil},
		{"an apply of another object's child", nil, func(e *faultEnv, _ *testing.T) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := e.kc.AppsV1().Deployments("ns").Apply(ctx, childOf("another-uid", true), apply)
				return err
			}
		}},
		{"an apply with owner references that aren't a controller's", nil, func(e *faultEnv, _ *testing.T) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := e.kc.AppsV1().Deployments("ns").Apply(ctx, childOf(ownerUID, false), apply)
				return err
			}
		}},
		{"an apply of a child's status", nil, func(e *faultEnv, _ *testing.T) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := e.kc.AppsV1().Deployments("ns").ApplyStatus(ctx, childOf(ownerUID, true), apply)
				return err
			}
		}},
		{"the reconciled object's own finalizer and status applies", nil, func(e *faultEnv, t *testing.T) func(context.Context) error {
			dyn, err := dynamic.NewForConfig(e.client.Config())
			require.NoError(t, err)
			own := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
				"metadata": map[string]any{"name": "cache", "uid": string(ownerUID), "finalizers": []any{"cache.example.com/finalizer"}},
			}}
			return func(ctx context.Context) error {
				if _, err := dyn.Resource(memcacheds).Namespace("ns").Apply(ctx, "cache", own, apply); err != nil {
					return err
				}
				_, err := dyn.Resource(memcacheds).Namespace("ns").ApplyStatus(ctx, "cache", own, apply)
				return err
			}
		}},
		{"a create of a child", nil, func(e *faultEnv, _ *testing.T) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := e.kc.AppsV1().Deployments("ns").Create(ctx, childDeployment(), metav1.CreateOptions{})
				return err
			}
		}},
		{"an update of a child", nil, func(e *faultEnv, _ *testing.T) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := e.kc.AppsV1().Deployments("ns").Update(ctx, childDeployment(), metav1.UpdateOptions{})
				return err
			}
		}},
		{"a merge patch of a child", nil, func(e *faultEnv, t *testing.T) func(context.Context) error {
			body, err := json.Marshal(childDeployment())
			require.NoError(t, err)
			return withBody(e.kc, types.MergePatchType, body)
		}},
		{"a strategic merge patch of a child", nil, func(e *faultEnv, t *testing.T) func(context.Context) error {
			body, err := json.Marshal(childDeployment())
			require.NoError(t, err)
			return withBody(e.kc, types.StrategicMergePatchType, body)
		}},
		{"a JSON patch of a child", nil, func(e *faultEnv, t *testing.T) func(context.Context) error {
			refs, err := json.Marshal(childDeployment().OwnerReferences)
			require.NoError(t, err)
			return withBody(e.kc, types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/ownerReferences","value":`+string(refs)+`}]`))
		}},
		{"a CBOR apply of a child", nil, func(e *faultEnv, t *testing.T) func(context.Context) error {
			body, err := direct.Marshal(map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "cache", "ownerReferences": []any{map[string]any{
					"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "cache", "uid": string(ownerUID), "controller": true,
				}}},
			})
			require.NoError(t, err)
			return withBody(e.kc, types.ApplyCBORPatchType, body)
		}},
		{"a protobuf body", nil, func(e *faultEnv, t *testing.T) func(context.Context) error {
			return withBody(e.kc, types.PatchType(runtime.ContentTypeProtobuf), protobufDeployment(t))
		}},
		{"a protobuf body sent as an apply", nil, func(e *faultEnv, t *testing.T) func(context.Context) error {
			return withBody(e.kc, types.ApplyPatchType, protobufDeployment(t))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newFaultEnv(t)
				ctx, _ := e.reconcile(t.Context(), t)
				if tt.ctx != nil {
					ctx = tt.ctx(e, t)
				}
				call := func(ctx context.Context) error {
					_, err := e.kc.AppsV1().Deployments("ns").Apply(ctx, childOf(ownerUID, true), apply)
					return err
				}
				if tt.call != nil {
					call = tt.call(e, t)
				}

				require.NoError(t, call(t.Context()))
				plain := e.api.requests()
				require.NoError(t, call(ctx))
				received := e.api.requests()[len(plain):]
				require.Len(t, received, len(plain))
				for i := range plain {
					require.Equal(t, plain[i].ContentType, received[i].ContentType)
					require.Equal(t, string(plain[i].Body), string(received[i].Body), "%s %s is sent as it is", received[i].Method, received[i].Path)
					require.NotContains(t, string(received[i].Body), scenarioMember)
				}
			})
		})
	}
}

// protobufDeployment returns childDeployment in Kubernetes' protobuf
// encoding.
func protobufDeployment(t *testing.T) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok)
	body, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, appsv1.SchemeGroupVersion), childDeployment())
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(body, []byte("k8s\x00")), "the protobuf envelope")
	return body
}
