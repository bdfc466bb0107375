package webhook_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/adapters/webhook"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
	"github.com/loam-dev/loam/app/tlsfiles"
	"github.com/loam-dev/loam/domain/jsonpatch"
	"github.com/loam-dev/loam/ports"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	serverName   = "webhook.shop.svc"
	validatePath = "/validate/cache.example.com/v1/memcacheds"
	mutatePath   = "/mutate/cache.example.com/v1/memcacheds"
	convertPath  = "/convert/cache.example.com/memcacheds"
	maxBytes     = 64 << 10
)

// admitter decides by the object's name: deny, warn, mutate, panic and
// slow, which waits for its context to end and keeps why it did.
type admitter struct {
	cause chan error
	// seen, for the object "baggage", gets the baggage the review's
	// context carries and what a Client's request made in it would meet.
	seen chan seen
	// faults is the App's failure injection.
	faults *fault.Injector
}

// seen is what the Admitter of the object "baggage" found in its context.
type seen struct {
	baggage baggage.Baggage
	trace   trace.SpanContext
	fault   error
}

func (a admitter) Admit(ctx context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error) {
	switch r.Name {
	case "deny":
		return ports.AdmissionResult{Warnings: []string{"size is large"}}, errors.New("spec.size: must be at most 10")
	case "warn":
		return ports.AdmissionResult{Warnings: []string{"size is large"}}, nil
	case "mutate":
		return ports.AdmissionResult{Object: []byte(mutated)}, nil
	case "panic":
		panic("boom")
	case "baggage":
		a.seen <- seen{baggage.FromContext(ctx), trace.SpanContextFromContext(ctx), a.faults.Inject(ctx, "kube:pods:get")}
		return ports.AdmissionResult{}, nil
	case "slow":
		<-ctx.Done()
		a.cause <- context.Cause(ctx)
		return ports.AdmissionResult{}, context.Cause(ctx)
	}
	return ports.AdmissionResult{}, nil
}

// converter sets the apiVersion.
type converter struct{}

func (converter) Convert(_ context.Context, obj []byte, apiVersion string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	m["apiVersion"] = apiVersion
	return json.Marshal(m)
}

func memcached(name string) string {
	return `{"apiVersion":"cache.example.com/v1","kind":"Memcached","metadata":{"namespace":"shop","name":"` + name + `"},"spec":{"size":3}}`
}

var mutated = `{"apiVersion":"cache.example.com/v1","kind":"Memcached","metadata":{"namespace":"shop","name":"mutate","labels":{"defaulted":"true"}},"spec":{"size":1}}`

// admissionReview returns a review of the Memcached name.
func admissionReview(name string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"uid-` + name + `",` +
		`"kind":{"group":"cache.example.com","version":"v1","kind":"Memcached"},` +
		`"resource":{"group":"cache.example.com","version":"v1","resource":"memcacheds"},` +
		`"namespace":"shop","name":"` + name + `","operation":"CREATE","userInfo":{"username":"alice"},` +
		`"object":` + memcached(name) + `}}`
}

// fixture is a Server on a test Host, with a client that trusts its CA.
type fixture struct {
	t         *testing.T
	host      *apptest.Host
	ca        *apptest.CA
	telemetry *apptest.Telemetry
	cert      *tlsfiles.Certificate
	server    *webhook.Server
	transport *http.Transport
	base      string
	causes    chan error
	seen      chan seen
	faults    *fault.Injector
}

// start serves the three Routes until the test ends, with a Config
// that each of with changes first.
func start(t *testing.T, with ...func(*webhook.Config)) *fixture {
	t.Helper()
	ca := apptest.NewCA(t)
	pair := ca.ServerCert(serverName)
	host := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{
		"tls/tls.crt": pair.CertPEM,
		"tls/tls.key": pair.KeyPEM,
	}))
	tel := apptest.NewTelemetry()
	logger := tel.LoggerProvider.Logger("test")
	settings := tlsfiles.DefaultSettings()
	settings.CertFile, settings.KeyFile = host.Path("tls/tls.crt"), host.Path("tls/tls.key")
	cert, err := tlsfiles.New(t.Context(), host.Host(), settings, logger)
	require.NoError(t, err)

	codec, err := jsonscenario.New("acme.fault")
	require.NoError(t, err)
	faults, err := fault.New(fault.Settings{Decoder: codec})
	require.NoError(t, err)
	f := &fixture{t: t, host: host, ca: ca, telemetry: tel, cert: cert, causes: make(chan error, 1), seen: make(chan seen, 1), faults: faults}
	adm := admitter{cause: f.causes, seen: f.seen, faults: faults}
	config := webhook.Config{
		Network:     host.Network,
		Address:     "localhost:9443",
		Certificate: cert,
		Routes: []webhook.Route{
			{Path: validatePath, Name: "validate.v1.memcacheds.cache.example.com", Type: webhook.Validating, Admitter: adm},
			{Path: mutatePath, Name: "mutate.v1.memcacheds.cache.example.com", Type: webhook.Mutating, Admitter: adm},
			{Path: convertPath, Name: "convert.memcacheds.cache.example.com", Type: webhook.Conversion, Converter: converter{}},
		},
		MaxRequestBytes: maxBytes,
		TracerProvider:  tel.TracerProvider,
		MeterProvider:   tel.MeterProvider,
		Propagator:      tel.Propagator,
		Faults:          faults,
		Logger:          logger,
	}
	for _, w := range with {
		w(&config)
	}
	f.server, err = webhook.New(config)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.server.Serve(ctx) }()
	f.transport = &http.Transport{
		DialContext:     host.Dial,
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: serverName, MinVersion: tls.VersionTLS12},
	}
	t.Cleanup(func() {
		f.transport.CloseIdleConnections()
		require.NoError(t, f.server.Shutdown(context.Background()))
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, tel.Shutdown(context.Background()))
	})
	select {
	case <-f.server.Ready():
	case err := <-served:
		t.Fatalf("Serve returned before it listened: %v", err)
	}
	f.base = "https://" + f.server.Addr().String()
	return f
}

// reply is what a test reads of a response, its body read and closed.
type reply struct {
	StatusCode int
	Header     http.Header
	TLS        *tls.ConnectionState
}

// do sends method path with body, and returns the response and its body.
func (f *fixture) do(method, path, contentType, body string, header ...string) (reply, string) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.t.Context(), method, f.base+path, strings.NewReader(body))
	require.NoError(f.t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Transport: f.transport}).Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return reply{StatusCode: resp.StatusCode, Header: resp.Header, TLS: resp.TLS}, string(b)
}

// review POSTs body as JSON to path.
func (f *fixture) review(path, body string) (reply, string) {
	f.t.Helper()
	return f.do(http.MethodPost, path, "application/json", body)
}

// admissionResponse is what the tests read of a response review.
type admissionResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   struct {
		UID      string   `json:"uid"`
		Allowed  bool     `json:"allowed"`
		Warnings []string `json:"warnings"`
		Status   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"status"`
		Patch     []byte `json:"patch"`
		PatchType string `json:"patchType"`
	} `json:"response"`
}

func decode(t *testing.T, body string) admissionResponse {
	t.Helper()
	var r admissionResponse
	require.NoError(t, json.Unmarshal([]byte(body), &r), body)
	require.Equal(t, "admission.k8s.io/v1", r.APIVersion)
	require.Equal(t, "AdmissionReview", r.Kind)
	return r
}

func TestServer_answers_admission_reviews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)

		resp, body := f.review(validatePath, admissionReview("ok"))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		r := decode(t, body)
		require.True(t, r.Response.Allowed)
		require.Equal(t, "uid-ok", r.Response.UID)

		_, body = f.review(validatePath, admissionReview("warn"))
		r = decode(t, body)
		require.True(t, r.Response.Allowed)
		require.Equal(t, []string{"size is large"}, r.Response.Warnings)

		_, body = f.review(validatePath, admissionReview("deny"))
		r = decode(t, body)
		require.False(t, r.Response.Allowed)
		require.Equal(t, []string{"size is large"}, r.Response.Warnings)
		require.Equal(t, 403, r.Response.Status.Code)
		require.Equal(t, "spec.size: must be at most 10", r.Response.Status.Message)
		require.Equal(t, []string{"spec.size: must be at most 10"}, f.telemetry.ExceptionMessages("admission denied"))

		_, body = f.review(mutatePath, admissionReview("mutate"))
		r = decode(t, body)
		require.True(t, r.Response.Allowed)
		require.Equal(t, "JSONPatch", r.Response.PatchType)
		patched, err := jsonpatch.Apply([]byte(memcached("mutate")), r.Response.Patch)
		require.NoError(t, err)
		require.JSONEq(t, mutated, string(patched))

		// A validating Route ignores what the Admitter returns.
		_, body = f.review(validatePath, admissionReview("mutate"))
		require.Nil(t, decode(t, body).Response.Patch)
	})
}

// The API server reads the HTTP status before the review: a 5xx is a
// failed call, which FailurePolicy Ignore admits. A panic is answered 200
// with a denial, which every failure policy keeps.
func TestServer_denies_a_panic_with_200_and_serves_the_next_review(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)
		resp, body := f.review(validatePath, admissionReview("panic"))
		require.Equal(t, http.StatusOK, resp.StatusCode, "a 5xx fails open under FailurePolicy Ignore")
		r := decode(t, body).Response
		require.False(t, r.Allowed)
		require.Equal(t, "the webhook panicked: boom", r.Status.Message)
		require.Equal(t, []string{"boom"}, f.telemetry.ExceptionMessages("webhook panicked"))

		resp, body = f.review(validatePath, admissionReview("ok"))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.True(t, decode(t, body).Response.Allowed)

		spans := f.telemetry.SpansNamed("validate Memcached")
		require.Len(t, spans, 2)
		require.Equal(t, codes.Error, spans[0].Status.Code)
		require.Equal(t, "exception", spans[0].Events[0].Name)
	})
}

// A WebhookService's Path or a URL's path puts a prefix in front of each
// Route's Path in the configurations; the Route answers there too.
func TestServer_serves_a_Route_under_any_prefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)
		for _, prefix := range []string{"", "/hooks", "/a/b", "/validate"} {
			resp, body := f.review(prefix+validatePath, admissionReview("deny"))
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", prefix, body)
			require.False(t, decode(t, body).Response.Allowed, prefix)
		}
		require.Len(t, f.telemetry.SpansNamed("validate Memcached"), 4)
	})
}

func TestServer_bounds_the_review_by_the_API_server_s_timeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)
		startedAt := time.Now()
		resp, body := f.review(validatePath+"?timeout=3s", admissionReview("slow"))
		require.Equal(t, 3*time.Second, time.Since(startedAt))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		r := decode(t, body)
		require.False(t, r.Response.Allowed)
		cause := <-f.causes
		require.EqualError(t, cause, "webhook validate.v1.memcacheds.cache.example.com: the API server's timeout of 3s for the review passed")
		require.Equal(t, cause.Error(), r.Response.Status.Message)
		require.Equal(t, []string{cause.Error()}, f.telemetry.ExceptionMessages("review failed"))
	})
}

func TestServer_refuses_what_is_not_a_review(t *testing.T) {
	tests := []struct {
		name, method, path, contentType, body, query string
		status                                       int
		want                                         string
	}{
		{name: "a wrong method", method: http.MethodGet, path: validatePath, contentType: "application/json", status: http.StatusMethodNotAllowed, want: "method GET, want POST"},
		{name: "an unknown path", method: http.MethodPost, path: "/validate/nothing", contentType: "application/json", status: http.StatusNotFound, want: "no webhook is served at /validate/nothing"},
		{name: "an unknown path under a prefix", method: http.MethodPost, path: "/hooks/validate/nothing", contentType: "application/json", status: http.StatusNotFound, want: "no webhook is served at /hooks/validate/nothing"},
		{name: "a Route's path with a tail", method: http.MethodPost, path: validatePath + "/extra", contentType: "application/json", status: http.StatusNotFound, want: "no webhook is served at " + validatePath + "/extra"},
		{name: "another content type", method: http.MethodPost, path: validatePath, contentType: "text/plain", body: admissionReview("ok"), status: http.StatusUnsupportedMediaType, want: `Content-Type is "text/plain", want application/json`},
		{name: "an oversize body", method: http.MethodPost, path: validatePath, contentType: "application/json", body: `{"x":"` + strings.Repeat("a", maxBytes) + `"}`, status: http.StatusRequestEntityTooLarge, want: fmt.Sprintf("the review is larger than %d bytes", maxBytes)},
		{name: "a bad timeout", method: http.MethodPost, path: validatePath + "?timeout=soon", contentType: "application/json", body: admissionReview("ok"), status: http.StatusBadRequest, want: `the timeout parameter "soon" is not a positive duration`},
		{name: "not JSON", method: http.MethodPost, path: validatePath, contentType: "application/json; charset=utf-8", body: `{`, status: http.StatusBadRequest, want: "decoding the AdmissionReview"},
		{name: "another kind", method: http.MethodPost, path: validatePath, contentType: "application/json", body: `{"apiVersion":"admission.k8s.io/v1","kind":"ConversionReview","request":{}}`, status: http.StatusBadRequest, want: `kind is \"ConversionReview\", want \"AdmissionReview\"`},
		{name: "another version", method: http.MethodPost, path: validatePath, contentType: "application/json", body: `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{}}`, status: http.StatusBadRequest, want: `apiVersion is \"admission.k8s.io/v1beta1\"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := start(t)
				resp, body := f.do(tt.method, tt.path, tt.contentType, tt.body)
				require.Equal(t, tt.status, resp.StatusCode, body)
				require.Contains(t, body, tt.want)
				if tt.status == http.StatusNotFound {
					require.Empty(t, f.telemetry.Spans(), "no Route, no review")
					return
				}
				// The next review on the connection is still answered.
				resp, _ = f.review(validatePath, admissionReview("ok"))
				require.Equal(t, http.StatusOK, resp.StatusCode)
			})
		})
	}
}

func TestServer_converts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)
		resp, body := f.review(convertPath, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c1","desiredAPIVersion":"cache.example.com/v2","objects":[`+memcached("a")+`]}}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var r struct {
			Response struct {
				UID              string            `json:"uid"`
				ConvertedObjects []json.RawMessage `json:"convertedObjects"`
				Result           struct{ Status string }
			} `json:"response"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &r))
		require.Equal(t, "c1", r.Response.UID)
		require.Equal(t, "Success", r.Response.Result.Status)
		require.Len(t, r.Response.ConvertedObjects, 1)
		require.Contains(t, string(r.Response.ConvertedObjects[0]), `"apiVersion":"cache.example.com/v2"`)
		require.Len(t, f.telemetry.SpansNamed("convert Memcached"), 1)
	})
}

// attrs returns the attributes of kvs as a map of strings.
func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func TestServer_reports_each_review(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)
		parent := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
		})
		resp, _ := f.do(http.MethodPost, mutatePath, "application/json", admissionReview("deny"),
			"traceparent", fmt.Sprintf("00-%s-%s-01", parent.TraceID(), parent.SpanID()))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		f.review(mutatePath, admissionReview("ok"))

		spans := f.telemetry.SpansNamed("mutate Memcached")
		require.Len(t, spans, 2)
		require.Equal(t, parent.TraceID(), spans[0].SpanContext.TraceID())
		require.Equal(t, parent.SpanID(), spans[0].Parent.SpanID())
		require.Equal(t, trace.SpanKindServer, spans[0].SpanKind)
		require.Equal(t, codes.Unset, spans[0].Status.Code, "a denial is no error")
		require.Equal(t, map[string]string{
			"k8s.namespace.name":               "shop",
			"loam.kube.object.name":            "deny",
			"loam.kube.object.kind":            "Memcached",
			"loam.kube.object.api_version":     "cache.example.com/v1",
			"loam.kube.webhook.operation":      "CREATE",
			"loam.kube.webhook.name":           "mutate.v1.memcacheds.cache.example.com",
			"loam.kube.webhook.type":           "mutating",
			"loam.kube.webhook.review.outcome": "denied",
			"loam.kube.webhook.review.uid":     "uid-deny",
		}, attrs(spans[0].Attributes))
		require.Equal(t, "allowed", attrs(spans[1].Attributes)["loam.kube.webhook.review.outcome"])

		var denial []attribute.KeyValue
		for _, r := range f.telemetry.Records() {
			if r.Body().AsString() == "admission denied" {
				require.Equal(t, "WARN", r.SeverityText())
				require.Equal(t, parent.TraceID(), r.TraceID())
				r.WalkAttributes(func(kv attribute.KeyValue) bool { denial = append(denial, kv); return true })
			}
		}
		require.Equal(t, "spec.size: must be at most 10", attrs(denial)["exception.message"])
		require.Equal(t, "deny", attrs(denial)["loam.kube.object.name"])

		m, err := f.telemetry.Metric(t.Context(), webhook.ReviewDurationName)
		require.NoError(t, err)
		counts := map[string]uint64{}
		for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
			a := attrs(dp.Attributes.ToSlice())
			require.Equal(t, "mutate.v1.memcacheds.cache.example.com", a["loam.kube.webhook.name"])
			require.Equal(t, "mutating", a["loam.kube.webhook.type"])
			counts[a["loam.kube.webhook.review.outcome"]] += dp.Count
		}
		require.Equal(t, map[string]uint64{"allowed": 1, "denied": 1}, counts)
		active, err := f.telemetry.Total(t.Context(), webhook.ReviewsActiveName)
		require.NoError(t, err)
		require.Zero(t, active)
	})
}

func TestServer_serves_a_rotated_certificate_to_new_connections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)
		serial := func() *big.Int {
			resp, _ := f.review(validatePath, admissionReview("ok"))
			return resp.TLS.PeerCertificates[0].SerialNumber
		}
		first := serial()
		next := f.ca.ServerCert(serverName)
		f.host.WriteFile("tls/tls.crt", next.CertPEM)
		f.host.WriteFile("tls/tls.key", next.KeyPEM)
		require.NoError(t, f.cert.Reload(t.Context()))
		require.Equal(t, first, serial(), "a kept-alive connection keeps its handshake")

		f.transport.CloseIdleConnections()
		require.Equal(t, next.Leaf.SerialNumber, serial())
		require.NotEqual(t, first, next.Leaf.SerialNumber)
	})
}

func TestServer_reloads_the_certificate_while_it_serves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := start(t)
		next := f.ca.ServerCert(serverName)
		f.host.WriteFile("tls/tls.crt", next.CertPEM)
		f.host.WriteFile("tls/tls.key", next.KeyPEM)
		time.Sleep(tlsfiles.DefaultReloadInterval) // synctest's clock: Run's ticker fires.
		synctest.Wait()
		require.True(t, bytes.Equal(next.Leaf.Raw, f.cert.Current().Certificate[0]))
	})
}

func TestNew_reports_every_mistake(t *testing.T) {
	tel := apptest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	err := func() error {
		_, err := webhook.New(webhook.Config{
			Routes: []webhook.Route{
				{Path: "validate", Type: webhook.Validating},
				{Path: "/x", Name: "x", Type: webhook.Conversion, Admitter: admitter{}},
				{Path: "/x", Name: "y", Type: webhook.Mutating, Admitter: admitter{}, Converter: converter{}},
				{Path: "/z", Name: "z"},
			},
		})
		return err
	}()
	require.Error(t, err)
	for _, want := range []string{
		"Config.Network is nil", "Config.Certificate is nil", "Config.TracerProvider is nil",
		"Config.MeterProvider is nil", "Config.Propagator is nil", "Config.Logger is nil",
		"Config.Address is empty", "Config.MaxRequestBytes is 0, below 1",
		`Routes[0] ("validate"): Path does not start with a slash`,
		`Routes[0] ("validate"): Name is empty`,
		`Routes[0] ("validate"): Admitter is nil for a validating Route`,
		`Routes[1] ("/x"): Converter is nil for a conversion Route`,
		`Routes[1] ("/x"): Admitter is set on a conversion Route`,
		`Routes[2] ("/x"): Path is Routes[1]'s too`,
		`Routes[2] ("/x"): Converter is set on a mutating Route`,
		`Routes[3] ("/z"): Type is Type(0), not Validating, Mutating or Conversion`,
	} {
		require.ErrorContains(t, err, want)
	}

	_, err = webhook.New(webhook.Config{})
	require.ErrorContains(t, err, "Config.Routes is empty")
}

// A review's own baggage header never puts its Admitter under a scenario:
// the scenario's members are stripped, with loam.fit.strip on the review's
// span, before the Admitter runs, so a Client it calls meets no fault.
// The trace and every other member go on.
func TestServer_strips_the_scenario_from_a_review_s_baggage(t *testing.T) {
	f := start(t)
	scenario, err := baggage.NewMemberRaw("acme.fault", `{"rules":[{"point":"*","abort":true}]}`)
	require.NoError(t, err)
	tenant, err := baggage.NewMemberRaw("tenant", "a")
	require.NoError(t, err)
	b, err := baggage.New(scenario, tenant)
	require.NoError(t, err)
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
	})
	for _, path := range []string{validatePath, mutatePath} {
		resp, _ := f.do(http.MethodPost, path, "application/json", admissionReview("baggage"),
			"traceparent", fmt.Sprintf("00-%s-%s-01", parent.TraceID(), parent.SpanID()), "baggage", b.String())
		require.Equal(t, http.StatusOK, resp.StatusCode)
		got := <-f.seen
		require.Empty(t, got.baggage.Member("acme.fault").Key(), "the scenario is stripped")
		require.Equal(t, "a", got.baggage.Member("tenant").Value(), "other members go on")
		require.Equal(t, parent.TraceID(), got.trace.TraceID(), "the trace goes on")
		require.NoError(t, got.fault, "a Client called in the review meets no fault")
	}
	spans := f.telemetry.SpansNamed("validate Memcached")
	require.Len(t, spans, 1)
	var names []string
	for _, e := range spans[0].Events {
		names = append(names, e.Name)
	}
	require.Contains(t, names, fault.StripEvent)
}
