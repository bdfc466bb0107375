package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/adapters/transport"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/internal/reconciled"
)

const (
	member     = "acme.fault"
	annotation = "acme.example.com/failure-scenario"
	ownerUID   = "owner-uid"
)

// recorder is the next layer: it keeps the requests it is handed, with
// their bodies, and answers 200.
type recorder struct {
	reqs   []*http.Request
	bodies [][]byte
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		_ = r.Body.Close()
		body = b
	}
	rec.reqs = append(rec.reqs, r)
	rec.bodies = append(rec.bodies, body)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// injector returns an enabled Injector on jsonscenario's member, and its
// codec.
func injector(t testing.TB) (*fault.Injector, *jsonscenario.Codec) {
	t.Helper()
	codec, err := jsonscenario.New(member)
	require.NoError(t, err)
	faults, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(t, err)
	return faults, codec
}

// withScenario returns ctx carrying s, written with codec.
func withScenario(ctx context.Context, t testing.TB, codec fit.Encoder, s fit.Scenario) context.Context {
	t.Helper()
	ctx, err := fit.ContextWithScenario(ctx, codec, s)
	require.NoError(t, err)
	return ctx
}

// withMember returns ctx with the baggage member key=value added.
func withMember(ctx context.Context, t testing.TB, key, value string) context.Context {
	t.Helper()
	m, err := baggage.NewMember(key, value)
	require.NoError(t, err)
	b, err := baggage.FromContext(ctx).SetMember(m)
	require.NoError(t, err)
	return baggage.ContextWithBaggage(ctx, b)
}

// tracing returns a tracer provider keeping its spans in memory.
func tracing() (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	spans := tracetest.NewSpanRecorder()
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)), spans
}

func newRequest(ctx context.Context, t testing.TB, method, url, contentType string, body []byte) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, url, rd)
	require.NoError(t, err)
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

func TestInjectFaults_passes_a_request_without_a_scenario_through_untouched(t *testing.T) {
	enabled, _ := injector(t)
	for _, tc := range []struct {
		name   string
		faults *fault.Injector
		ctx    context.Context
		header string
	}{
		{"inert injector", fault.Inert(), t.Context(), "tenant=a," + member + "=not-from-the-context"},
		{"nil injector", nil, t.Context(), "tenant=a," + member + "=not-from-the-context"},
		{"no baggage", enabled, t.Context(), ""},
		{"other members only", enabled, withMember(t.Context(), t, "tenant", "a"), "tenant=a,other.fault=x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []*http.Request
			answer := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
			rt := transport.InjectFaults(tc.faults)(roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if got == nil {
					got = append(got, r)
				}
				return answer, nil
			}))
			r := newRequest(tc.ctx, t, http.MethodGet, "https://api.test/api/v1/namespaces", "", nil)
			if tc.header != "" {
				r.Header.Set("Baggage", tc.header)
			}
			require.NoError(t, roundTrip(rt, r))
			require.Len(t, got, 1)
			require.Same(t, r, got[0], "the very request, not a copy")
			require.Equal(t, tc.header, got[0].Header.Get("Baggage"),
				"an inert layer strips nothing, and no layer strips what isn't the Decoder's")

			allocs := testing.AllocsPerRun(100, func() {
				_ = roundTrip(rt, r)
			})
			require.Zero(t, allocs, "the layer allocates nothing for a request without a scenario")
		})
	}
}

// TestInjectFaults_strips_a_hand_set_baggage_header: a request whose
// context carries no scenario, but whose baggage header was set by hand
// with the Decoder's member, reaches the next layer without it, every
// other member kept, and the caller's request unchanged.
func TestInjectFaults_strips_a_hand_set_baggage_header(t *testing.T) {
	faults, _ := injector(t)
	tp, spans := tracing()
	ctx, span := tp.Tracer("test").Start(t.Context(), "call")
	rec := &recorder{}
	r := newRequest(ctx, t, http.MethodGet, "https://api.test/api/v1/namespaces", "", nil)
	r.Header.Add("Baggage", "tenant=a, "+member+"=%7B%22rules%22:[]%7D;prop")
	r.Header.Add("Baggage", member+"=x")
	require.NoError(t, roundTrip(transport.InjectFaults(faults)(rec), r))
	span.End()
	require.Len(t, rec.reqs, 1)
	require.Equal(t, []string{"tenant=a"}, rec.reqs[0].Header.Values("Baggage"))
	require.Len(t, r.Header.Values("Baggage"), 2, "the caller's request is left as it was")
	events := spans.Ended()[0].Events()
	require.Len(t, events, 1)
	require.Equal(t, fault.StripEvent, events[0].Name)
}

// TestInjectFaults_a_status_answers_as_the_API_server_would: a status
// fault answers the request with nothing sent, with the code, a
// metav1.Status body that apimachinery reads back as the API server's own
// error, and the Retry-After header a 429 or a 503 asks for.
func TestInjectFaults_a_status_answers_as_the_API_server_would(t *testing.T) {
	const path = "https://api.test/apis/apps/v1/namespaces/ns/deployments/web"
	for _, tc := range []struct {
		name       string
		method     string
		url        string
		fault      fit.Fault
		is         func(error) bool
		reason     metav1.StatusReason
		retryAfter string
		message    string
	}{
		{"a 409 to a patch is a conflict", http.MethodPatch, path, fit.Fault{Status: 409}, apierrors.IsConflict, metav1.StatusReasonConflict, "",
			`Operation cannot be fulfilled on deployments.apps "web": the object has been modified; please apply your changes to the latest version and try again (fault injected at point "kube:deployments.apps:patch", experiment "x-1")`},
		{"a 409 to a create is already there", http.MethodPost, "https://api.test/apis/apps/v1/namespaces/ns/deployments", fit.Fault{Status: 409}, apierrors.IsAlreadyExists, metav1.StatusReasonAlreadyExists, "", "already exists"},
		{"a 429 with its Retry-After", http.MethodPatch, path, fit.Fault{Status: 429, RetryAfter: 3 * time.Second}, apierrors.IsTooManyRequests, metav1.StatusReasonTooManyRequests, "3",
			`Too many requests, please try again later. (fault injected at point "kube:deployments.apps:patch", experiment "x-1")`},
		{"a 500", http.MethodGet, path, fit.Fault{Status: 500}, apierrors.IsInternalError, metav1.StatusReasonInternalError, "",
			`Internal error occurred: fault injected at point "kube:deployments.apps:get", experiment "x-1"`},
		{"a 503 with its Retry-After", http.MethodGet, path, fit.Fault{Status: 503, RetryAfter: time.Second}, apierrors.IsServiceUnavailable, metav1.StatusReasonServiceUnavailable, "1",
			`fault injected at point "kube:deployments.apps:get", experiment "x-1"`},
		{"a 404", http.MethodGet, path, fit.Fault{Status: 404}, apierrors.IsNotFound, metav1.StatusReasonNotFound, "", `deployments.apps "web" not found (fault injected`},
		{"a 403", http.MethodGet, path, fit.Fault{Status: 403}, apierrors.IsForbidden, metav1.StatusReasonForbidden, "", `deployments.apps "web" is forbidden: fault injected at point`},
		{"a 422", http.MethodPatch, path, fit.Fault{Status: 422}, apierrors.IsInvalid, metav1.StatusReasonInvalid, "", "fault injected"},
		{"a 504", http.MethodDelete, path, fit.Fault{Status: 504}, apierrors.IsTimeout, metav1.StatusReasonTimeout, "", "fault injected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults, codec := injector(t)
			ctx := withScenario(t.Context(), t, codec, fit.Scenario{ID: "x-1", Rules: []fit.Rule{{Point: "kube:*", Fault: tc.fault}}})
			rec := &recorder{}
			body := &closeTracker{Reader: strings.NewReader(`{}`)}
			r, err := http.NewRequestWithContext(ctx, tc.method, tc.url, body)
			require.NoError(t, err)
			resp, err := transport.InjectFaults(faults)(rec).RoundTrip(r)
			require.NoError(t, err, "a status is an answer, not a failure of the transport")
			require.Empty(t, rec.reqs, "nothing is sent")
			require.True(t, body.closed, "the body of a request that isn't sent is closed")
			defer func() { _ = resp.Body.Close() }()

			require.Equal(t, tc.fault.Status, resp.StatusCode)
			require.Same(t, r, resp.Request)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			require.Equal(t, tc.retryAfter, resp.Header.Get("Retry-After"))
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.EqualValues(t, len(raw), resp.ContentLength)

			var status metav1.Status
			require.NoError(t, json.Unmarshal(raw, &status))
			require.Equal(t, "Status", status.Kind)
			require.Equal(t, "v1", status.APIVersion)
			require.Equal(t, metav1.StatusFailure, status.Status)
			require.EqualValues(t, tc.fault.Status, status.Code)
			require.Equal(t, tc.reason, status.Reason)
			require.Contains(t, status.Message, tc.message)
			err = &apierrors.StatusError{ErrStatus: status}
			require.True(t, tc.is(err), "apimachinery reads the body as the API server's own %s", tc.reason)
			if tc.retryAfter != "" {
				seconds, ok := apierrors.SuggestsClientDelay(err)
				require.True(t, ok)
				require.Equal(t, tc.retryAfter, strconv.Itoa(seconds))
			}
		})
	}
}

func TestInjectFaults_abort_fails_before_the_next_layer(t *testing.T) {
	faults, codec := injector(t)
	tp, spans := tracing()
	ctx := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:configmaps:create", Fault: fit.Fault{Abort: true}},
	}})
	ctx, span := tp.Tracer("test").Start(ctx, "reconcile")

	rec := &recorder{}
	body := &closeTracker{Reader: strings.NewReader(`{}`)}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.test/api/v1/namespaces/ns/configmaps", body)
	require.NoError(t, err)
	err = roundTrip(transport.InjectFaults(faults)(rec), r)
	span.End()
	require.Empty(t, rec.reqs, "nothing reaches the next layer")
	require.True(t, body.closed, "the body of a request that isn't sent is closed")

	var injected *fault.InjectedError
	require.ErrorAs(t, err, &injected)
	require.Equal(t, "kube:configmaps:create", injected.Point)
	require.Equal(t, semconv.ErrorTypeKey.String("github.com/loam-dev/loam/app/fault.InjectedError"), semconv.ErrorType(err),
		"OpenTelemetry names the error by the fault package's type")

	events := spans.Ended()[0].Events()
	require.Len(t, events, 1)
	require.Equal(t, fault.EvaluationEvent, events[0].Name)
}

func TestInjectFaults_delay_waits_inside_the_requests_context(t *testing.T) {
	faults, codec := injector(t)
	ctx := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:*", Fault: fit.Fault{Delay: time.Millisecond}},
	}})
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	rec := &recorder{}
	err := roundTrip(transport.InjectFaults(faults)(rec), newRequest(ctx, t, http.MethodGet, "https://api.test/version", "", nil))
	require.ErrorIs(t, err, context.Canceled)
	var injected *fault.InjectedError
	require.ErrorAs(t, err, &injected)
	require.Equal(t, "kube:/version:get", injected.Point)
	require.Empty(t, rec.reqs)
}

// closeTracker is a request body that records whether it was closed.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error {
	c.closed = true
	return nil
}

func TestInjectFaults_strips_the_scenario_from_the_baggage_header(t *testing.T) {
	faults, codec := injector(t)
	scenario := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{{Point: "none", Fault: fit.Fault{}}}})
	value := baggage.FromContext(scenario).Member(member).String()
	tests := []struct {
		name   string
		header []string
		want   []string
	}{
		{"scenario first", []string{value + ",tenant=a,region=eu"}, []string{"tenant=a,region=eu"}},
		{"scenario last, with spaces", []string{"tenant=a , " + value}, []string{"tenant=a"}},
		{"properties and encodings kept", []string{"tenant=a%20b;ttl=3, " + value + ";p=1,k=v"}, []string{"tenant=a%20b;ttl=3,k=v"}},
		{"several header values", []string{"tenant=a", value, "region=eu"}, []string{"tenant=a", "region=eu"}},
		{"only the scenario", []string{value}, nil},
		{"a member whose name starts like the scenario's", []string{value + "," + member + "x=1"}, []string{member + "x=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, spans := tracing()
			ctx, span := tp.Tracer("test").Start(scenario, "request")
			r := newRequest(ctx, t, http.MethodGet, "https://api.test/api/v1/pods", "", nil)
			r.Header.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
			for _, v := range tt.header {
				r.Header.Add("Baggage", v)
			}
			rec := &recorder{}
			err := roundTrip(transport.InjectFaults(faults)(rec), r)
			require.NoError(t, err)
			span.End()

			require.Len(t, rec.reqs, 1)
			sent := rec.reqs[0]
			require.Equal(t, tt.want, sent.Header.Values("Baggage"))
			require.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", sent.Header.Get("Traceparent"))
			require.Equal(t, tt.header, r.Header.Values("Baggage"), "the caller's request is unchanged")

			var names []string
			for _, e := range spans.Ended()[0].Events() {
				names = append(names, e.Name)
			}
			require.Equal(t, []string{fault.EvaluationEvent, fault.StripEvent}, names)
		})
	}

	t.Run("nothing to strip, no event", func(t *testing.T) {
		tp, spans := tracing()
		ctx, span := tp.Tracer("test").Start(scenario, "request")
		r := newRequest(ctx, t, http.MethodGet, "https://api.test/api/v1/pods", "", nil)
		r.Header.Set("Baggage", "tenant=a")
		rec := &recorder{}
		err := roundTrip(transport.InjectFaults(faults)(rec), r)
		require.NoError(t, err)
		span.End()
		require.Equal(t, "tenant=a", rec.reqs[0].Header.Get("Baggage"))
		events := spans.Ended()[0].Events()
		require.Len(t, events, 1)
		require.Equal(t, fault.EvaluationEvent, events[0].Name)
	})
}

// TestInjectFaults_sets_the_annotation_on_a_childs_apply_body checks that
// the layer hands a child's apply body to scenario.AnnotateChild, turning
// YAML into JSON first, and sends what it decides; the domain's own tests
// cover every shape of body.
func TestInjectFaults_sets_the_annotation_on_a_childs_apply_body(t *testing.T) {
	faults, codec := injector(t)
	ctx := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{{Point: "none", Fault: fit.Fault{}}}})
	scenario := baggage.FromContext(ctx)
	ctx = withMember(ctx, t, "tenant", "a")
	ctx = reconciled.WithObject(ctx, ownerUID, annotation, baggage.FromContext(ctx))
	value := scenario.String()
	quoted := strings.ReplaceAll(value, `"`, `\"`)

	const refs = `"ownerReferences":[{"apiVersion":"v1","kind":"Owner","name":"o","uid":"owner-uid","controller":true}]`
	tests := []struct {
		name string
		body string
		want string // "" when the body goes as it is
	}{
		{"JSON, no annotations",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c",` + refs + `},"data":{"n":"12345678901234567890123"}}`,
			`{"apiVersion":"v1","data":{"n":"12345678901234567890123"},"kind":"ConfigMap","metadata":{"annotations":{"` + annotation + `":"` + quoted + `"},"name":"c",` + refs + `}}`},
		{"YAML",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  ownerReferences:\n  - apiVersion: v1\n    kind: Owner\n    name: o\n    uid: owner-uid\n    controller: true\n",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"annotations":{"` + annotation + `":"` + quoted + `"},"name":"c",` +
				`"ownerReferences":[{"apiVersion":"v1","controller":true,"kind":"Owner","name":"o","uid":"owner-uid"}]}}`},
		{"YAML with an anchor",
			"refs: &r [{uid: owner-uid, controller: true}]\nmetadata:\n  ownerReferences: *r\n",
			`{"metadata":{"annotations":{"` + annotation + `":"` + quoted + `"},"ownerReferences":[{"controller":true,"uid":"owner-uid"}]},"refs":[{"controller":true,"uid":"owner-uid"}]}`},

		{"JSON: another object's child", `{"metadata":{"ownerReferences":[{"uid":"other","controller":true},{"uid":"owner-uid"}]}}`, ""},
		{"YAML: another object's child", "metadata:\n  ownerReferences:\n  - {uid: other, controller: true}\n", ""},
		{"JSON the domain can't read", `{"metadata":{` + refs + `},"metadata":{` + refs + `}}`, ""},
		{"not JSON or YAML", "\x00\x01\x02 protobuf?", ""},
		{"YAML that isn't an object", "- a\n- b\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			r := newRequest(ctx, t, http.MethodPatch, "https://api.test/api/v1/namespaces/ns/configmaps/c?fieldManager=m", transport.ApplyPatchYAML, []byte(tt.body))
			err := roundTrip(transport.InjectFaults(faults)(rec), r)
			require.NoError(t, err)
			require.Len(t, rec.reqs, 1)
			sent := rec.reqs[0]
			want := tt.want
			if want == "" {
				want = tt.body
			}
			require.Equal(t, want, string(rec.bodies[0]))
			require.Equal(t, int64(len(want)), sent.ContentLength)
			if want != "" {
				again, err := sent.GetBody()
				require.NoError(t, err)
				b, err := io.ReadAll(again)
				require.NoError(t, err)
				require.Equal(t, want, string(b), "GetBody returns the body sent")
			}
			require.Equal(t, transport.ApplyPatchYAML, sent.Header.Get("Content-Type"))
		})
	}
}

func TestInjectFaults_leaves_requests_that_arent_a_childs_apply_alone(t *testing.T) {
	faults, codec := injector(t)
	scenario := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{{Point: "none", Fault: fit.Fault{}}}})
	marked := reconciled.WithObject(scenario, ownerUID, annotation, baggage.FromContext(scenario))
	const body = `{"metadata":{"ownerReferences":[{"uid":"owner-uid","controller":true}]}}`
	const object = "https://api.test/apis/apps/v1/namespaces/ns/deployments/d"
	tests := []struct {
		name                     string
		ctx                      context.Context
		method, url, contentType string
	}{
		{"no mark: outside a reconcile", scenario, http.MethodPatch, object, transport.ApplyPatchYAML},
		{"a mark with no scenario", reconciled.WithObject(scenario, ownerUID, annotation, baggage.Baggage{}), http.MethodPatch, object, transport.ApplyPatchYAML},
		{"a create", marked, http.MethodPost, "https://api.test/apis/apps/v1/namespaces/ns/deployments", "application/json"},
		{"an update", marked, http.MethodPut, object, "application/json"},
		{"a merge patch", marked, http.MethodPatch, object, "application/merge-patch+json"},
		{"a strategic merge patch", marked, http.MethodPatch, object, "application/strategic-merge-patch+json"},
		{"a JSON patch", marked, http.MethodPatch, object, "application/json-patch+json"},
		{"a CBOR apply", marked, http.MethodPatch, object, "application/apply-patch+cbor"},
		{"a protobuf body", marked, http.MethodPatch, object, "application/vnd.kubernetes.protobuf"},
		{"an apply of a subresource", marked, http.MethodPatch, object + "/status", transport.ApplyPatchYAML},
		{"an apply of a collection", marked, http.MethodPatch, "https://api.test/apis/apps/v1/namespaces/ns/deployments", transport.ApplyPatchYAML},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			r := newRequest(tt.ctx, t, tt.method, tt.url, tt.contentType, []byte(body))
			err := roundTrip(transport.InjectFaults(faults)(rec), r)
			require.NoError(t, err)
			require.Equal(t, body, string(rec.bodies[0]))
		})
	}

	t.Run("an apply whose context carries no scenario", func(t *testing.T) {
		rec := &recorder{}
		unmarked := reconciled.WithObject(t.Context(), ownerUID, annotation, baggage.FromContext(scenario))
		r := newRequest(unmarked, t, http.MethodPatch, object, transport.ApplyPatchYAML, []byte(body))
		err := roundTrip(transport.InjectFaults(faults)(rec), r)
		require.NoError(t, err)
		require.Same(t, r, rec.reqs[0], "passed through untouched")
	})
}

func TestInjectFaults_fails_a_childs_apply_whose_body_cant_be_read(t *testing.T) {
	faults, codec := injector(t)
	ctx := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{{Point: "none", Fault: fit.Fault{}}}})
	ctx = reconciled.WithObject(ctx, ownerUID, annotation, baggage.FromContext(ctx))
	rec := &recorder{}
	r, err := http.NewRequestWithContext(ctx, http.MethodPatch, "https://api.test/api/v1/namespaces/ns/configmaps/c", io.MultiReader(strings.NewReader("{"), failingReader{}))
	require.NoError(t, err)
	r.Header.Set("Content-Type", transport.ApplyPatchYAML)
	err = roundTrip(transport.InjectFaults(faults)(rec), r)
	require.ErrorContains(t, err, "kube:configmaps:patch: reading the apply's body: the disk is gone")
	require.Empty(t, rec.reqs)
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("the disk is gone") }

func TestInjectFaults_under_otelhttp_names_the_error_type_on_the_span(t *testing.T) {
	faults, codec := injector(t)
	tp, spans := tracing()
	ctx := withScenario(t.Context(), t, codec, fit.Scenario{Rules: []fit.Rule{{Point: "kube:*", Fault: fit.Fault{Abort: true}}}})
	rt := otelhttp.NewTransport(transport.InjectFaults(faults)(&recorder{}),
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))
	err := roundTrip(rt, newRequest(ctx, t, http.MethodGet, "https://api.test/api/v1/pods", "", nil))
	require.Error(t, err)
	ended := spans.Ended()
	require.Len(t, ended, 1)
	var errorType string
	for _, kv := range ended[0].Attributes() {
		if kv.Key == semconv.ErrorTypeKey {
			errorType = kv.Value.AsString()
		}
	}
	require.Equal(t, "github.com/loam-dev/loam/app/fault.InjectedError", errorType)
}

// BenchmarkInjectFaults measures the layer alone, in front of a next layer
// that answers at once: a request with no scenario (what every request of a
// controller outside an experiment pays), and one with a scenario whose
// rules match nothing (an evaluation, its event and the strip).
//
//	go test -run '^$' -bench InjectFaults -benchmem ./adapters/transport/
func BenchmarkInjectFaults(b *testing.B) {
	faults, codec := injector(b)
	answer := &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}
	ok := roundTripFunc(func(*http.Request) (*http.Response, error) { return answer, nil })
	tp, _ := tracing()
	traced, span := tp.Tracer("bench").Start(context.Background(), "reconcile")
	defer span.End()
	scenario := withScenario(traced, b, codec, fit.Scenario{Rules: []fit.Rule{{Point: "kube:secrets:*", Fault: fit.Fault{Abort: true}}}})
	for _, bc := range []struct {
		name   string
		faults *fault.Injector
		ctx    context.Context
	}{
		{"no layer", nil, context.Background()},
		{"no baggage", faults, context.Background()},
		{"no scenario", faults, withMember(context.Background(), b, "tenant", "a")},
		{"a scenario matching nothing", faults, scenario},
	} {
		b.Run(bc.name, func(b *testing.B) {
			rt := http.RoundTripper(ok)
			if bc.faults != nil {
				rt = transport.InjectFaults(bc.faults)(ok)
			}
			r, err := http.NewRequestWithContext(bc.ctx, http.MethodGet, "https://api.test/api/v1/namespaces/ns/configmaps", nil)
			if err != nil {
				b.Fatal(err)
			}
			if b := baggage.FromContext(bc.ctx); b.Len() > 0 {
				r.Header.Set("Baggage", b.String())
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := roundTrip(rt, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// roundTrip sends r through rt, and closes the response's body.
func roundTrip(rt http.RoundTripper, r *http.Request) error {
	resp, err := rt.RoundTrip(r)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzInjectFaults_child_apply sends any body as a child's apply in a
// reconcile that carries a scenario: the layer never fails or panics, and
// sends either the body as it was, or JSON whose annotation is the
// scenario and whose controller reference is the reconciled object's.
func FuzzInjectFaults_child_apply(f *testing.F) {
	f.Add([]byte(`{"metadata":{"ownerReferences":[{"uid":"owner-uid","controller":true}]}}`))
	f.Add([]byte("metadata:\n  ownerReferences:\n  - uid: owner-uid\n    controller: true\n"))
	f.Add([]byte(`{"metadata":{"annotations":{"a":"b"},"ownerReferences":[{"uid":"other","controller":true}]}}`))
	f.Add([]byte(`[]`))
	faults, codec := injector(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := withScenario(t.Context(), t, codec, fit.Scenario{})
		scenario := baggage.FromContext(ctx)
		ctx = reconciled.WithObject(ctx, ownerUID, annotation, scenario)
		rec := &recorder{}
		r := newRequest(ctx, t, http.MethodPatch, "https://api.test/api/v1/namespaces/ns/configmaps/c", transport.ApplyPatchYAML, body)
		require.NoError(t, roundTrip(transport.InjectFaults(faults)(rec), r))
		got := rec.bodies[0]
		if bytes.Equal(got, body) {
			return
		}
		var obj struct {
			Metadata struct {
				Annotations     map[string]string `json:"annotations"`
				OwnerReferences []struct {
					UID        string `json:"uid"`
					Controller *bool  `json:"controller"`
				} `json:"ownerReferences"`
			} `json:"metadata"`
		}
		require.NoError(t, json.Unmarshal(got, &obj), "a changed body is JSON: %s", got)
		require.Equal(t, scenario.String(), obj.Metadata.Annotations[annotation])
		var controller string
		for _, ref := range obj.Metadata.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				controller = ref.UID
				break
			}
		}
		require.Equal(t, ownerUID, controller, "only a child is changed: %s", body)
	})
}
