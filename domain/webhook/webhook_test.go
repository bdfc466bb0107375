package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/jsonpatch"
	"github.com/loam-dev/loam/domain/webhook"
	"github.com/loam-dev/loam/ports"
)

// admitFunc is an Admitter of a function.
type admitFunc func(ctx context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error)

func (f admitFunc) Admit(ctx context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error) {
	return f(ctx, r)
}

// convertFunc is a Converter of a function.
type convertFunc func(ctx context.Context, obj []byte, apiVersion string) ([]byte, error)

func (f convertFunc) Convert(ctx context.Context, obj []byte, apiVersion string) ([]byte, error) {
	return f(ctx, obj, apiVersion)
}

// statusError is an error with a Status, as apimachinery's errors are.
type statusError struct{ st metav1.Status }

func (e statusError) Error() string         { return e.st.Message }
func (e statusError) Status() metav1.Status { return e.st }

const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`

// admissionReview returns the body of a review asking about pod.
func admissionReview(t testing.TB, edit func(*admissionv1.AdmissionReview)) []byte {
	t.Helper()
	dry := true
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "uid-1",
			Kind:      metav1.GroupVersionKind{Group: "", Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace: "shop", Name: "web",
			Operation: admissionv1.Create,
			DryRun:    &dry,
		},
	}
	r.Request.Object.Raw = []byte(pod)
	r.Request.UserInfo.Username = "alice"
	r.Request.UserInfo.Groups = []string{"devs"}
	if edit != nil {
		edit(&r)
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return b
}

// response decodes the response review of o.
func response(t *testing.T, o webhook.Outcome) *admissionv1.AdmissionResponse {
	t.Helper()
	var r admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(o.Body, &r), "%s", o.Body)
	require.Equal(t, "admission.k8s.io/v1", r.APIVersion)
	require.Equal(t, "AdmissionReview", r.Kind)
	require.NotNil(t, r.Response)
	require.Equal(t, "uid-1", string(r.Response.UID))
	return r.Response
}

func TestAdmit_answers_what_is_not_a_review_with_400(t *testing.T) {
	never := admitFunc(func(context.Context, ports.AdmissionRequest) (ports.AdmissionResult, error) {
		panic("the Admitter must not be called")
	})
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{"apiVersion":`, "decoding the AdmissionReview"},
		{"empty", ``, "decoding the AdmissionReview"},
		{"another version", string(admissionReview(t, func(r *admissionv1.AdmissionReview) { r.APIVersion = "admission.k8s.io/v1beta1" })), `apiVersion is "admission.k8s.io/v1beta1", want "admission.k8s.io/v1"`},
		{"another kind", string(admissionReview(t, func(r *admissionv1.AdmissionReview) { r.Kind = "ConversionReview" })), `kind is "ConversionReview", want "AdmissionReview"`},
		{"no request", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, "request is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := webhook.Admit(t.Context(), []byte(tt.body), true, never)
			require.Equal(t, 400, o.Status)
			require.Equal(t, webhook.Errored, o.Result)
			require.Contains(t, o.Message, tt.want)
			var st metav1.Status
			require.NoError(t, json.Unmarshal(o.Body, &st))
			require.Equal(t, int32(400), st.Code)
			require.Equal(t, metav1.StatusReasonBadRequest, st.Reason)
			require.Contains(t, st.Message, tt.want)
		})
	}
}

func TestAdmit_hands_the_Admitter_the_request(t *testing.T) {
	var got ports.AdmissionRequest
	a := admitFunc(func(_ context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error) {
		got = r
		return ports.AdmissionResult{}, nil
	})
	body := admissionReview(t, func(r *admissionv1.AdmissionReview) {
		r.Request.Operation = admissionv1.Update
		r.Request.SubResource = "status"
		r.Request.OldObject.Raw = []byte(pod)
	})
	o := webhook.Admit(t.Context(), body, false, a)
	require.Equal(t, 200, o.Status)
	require.Equal(t, ports.AdmissionRequest{
		UID: "uid-1", Version: "v1", Kind: "Pod", Resource: "pods", SubResource: "status",
		Namespace: "shop", Name: "web", Operation: "UPDATE",
		Object: []byte(pod), OldObject: []byte(pod), DryRun: true, UserName: "alice", Groups: []string{"devs"},
	}, got)
	require.Equal(t, webhook.Outcome{
		Status: 200, Body: o.Body, Version: "v1", Kind: "Pod", Namespace: "shop", Name: "web",
		Operation: "UPDATE", UID: "uid-1", Result: webhook.Allowed,
	}, o)
}

func TestAdmit_decides_with_the_Admitter(t *testing.T) {
	mutated := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop","labels":{"app":"web","tier":"front"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`
	tests := []struct {
		name     string
		mutating bool
		result   ports.AdmissionResult
		err      error
		want     webhook.Result
		allowed  bool
		code     int32
		reason   metav1.StatusReason
		message  string
		patched  string // the object the patch makes, or "" for no patch
	}{
		{name: "allowed with warnings", result: ports.AdmissionResult{Warnings: []string{"replicas is high"}}, want: webhook.Allowed, allowed: true},
		{name: "denied with the error's message and code 403", err: errors.New("spec.replicas: must be at most 10"), result: ports.AdmissionResult{Warnings: []string{"w"}}, want: webhook.Denied, code: 403, reason: metav1.StatusReasonForbidden, message: "spec.replicas: must be at most 10"},
		{name: "denied with an API status error's code and reason", err: fmt.Errorf("wrapped: %w", statusError{metav1.Status{Code: 422, Reason: metav1.StatusReasonInvalid, Message: "spec.size: Invalid value"}}), want: webhook.Denied, code: 422, reason: metav1.StatusReasonInvalid, message: "spec.size: Invalid value"},
		{name: "a mutation's patch", mutating: true, result: ports.AdmissionResult{Object: []byte(mutated)}, want: webhook.Allowed, allowed: true, patched: mutated},
		{name: "no patch for an equal object", mutating: true, result: ports.AdmissionResult{Object: []byte(pod)}, want: webhook.Allowed, allowed: true},
		{name: "no patch for no object", mutating: true, want: webhook.Allowed, allowed: true},
		{name: "no patch from a validating webhook", result: ports.AdmissionResult{Object: []byte(mutated)}, want: webhook.Allowed, allowed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := admitFunc(func(context.Context, ports.AdmissionRequest) (ports.AdmissionResult, error) { return tt.result, tt.err })
			o := webhook.Admit(t.Context(), admissionReview(t, nil), tt.mutating, a)
			require.Equal(t, 200, o.Status)
			require.Equal(t, tt.want, o.Result)
			require.Equal(t, tt.message, o.Message)
			require.Equal(t, tt.result.Warnings, o.Warnings)
			r := response(t, o)
			require.Equal(t, tt.allowed, r.Allowed)
			require.Equal(t, tt.result.Warnings, r.Warnings)
			if !tt.allowed {
				require.Equal(t, &metav1.Status{Status: metav1.StatusFailure, Code: tt.code, Reason: tt.reason, Message: tt.message}, r.Result)
			}
			if tt.patched == "" {
				require.Nil(t, r.Patch)
				require.Nil(t, r.PatchType)
				return
			}
			require.Equal(t, admissionv1.PatchTypeJSONPatch, *r.PatchType)
			got, err := jsonpatch.Apply([]byte(pod), r.Patch)
			require.NoError(t, err)
			require.JSONEq(t, tt.patched, string(got))
		})
	}
}

func TestAdmit_denies_with_200_when_the_Admitter_panics(t *testing.T) {
	a := admitFunc(func(context.Context, ports.AdmissionRequest) (ports.AdmissionResult, error) { panic("boom") })
	o := webhook.Admit(t.Context(), admissionReview(t, nil), false, a)
	require.Equal(t, 200, o.Status, "a 5xx is a failed call, which FailurePolicy Ignore admits")
	require.Equal(t, webhook.Panicked, o.Result)
	require.Equal(t, "boom", o.Panic)
	require.Contains(t, string(o.Stack), "TestAdmit_denies_with_200_when_the_Admitter_panics")
	r := response(t, o)
	require.False(t, r.Allowed)
	require.Equal(t, int32(500), r.Result.Code)
	require.Equal(t, "the webhook panicked: boom", r.Result.Message)
}

func TestAdmit_denies_with_200_a_mutation_that_is_not_an_object(t *testing.T) {
	a := admitFunc(func(context.Context, ports.AdmissionRequest) (ports.AdmissionResult, error) {
		return ports.AdmissionResult{Object: []byte(`[1]`)}, nil
	})
	o := webhook.Admit(t.Context(), admissionReview(t, nil), true, a)
	require.Equal(t, 200, o.Status)
	require.Equal(t, webhook.Errored, o.Result)
	require.Contains(t, o.Message, "computing the patch of shop/web")
	require.False(t, response(t, o).Allowed)
}

func TestAdmit_says_a_denial_after_the_timeout_is_an_error(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	a := admitFunc(func(ctx context.Context, _ ports.AdmissionRequest) (ports.AdmissionResult, error) {
		cancel()
		return ports.AdmissionResult{}, ctx.Err()
	})
	o := webhook.Admit(ctx, admissionReview(t, nil), false, a)
	require.Equal(t, webhook.Errored, o.Result)
	require.False(t, response(t, o).Allowed)
}

// conversionReview returns the body of a review converting objs to v2.
// It is written with json.RawMessage, which encodes as the review's
// runtime.RawExtension does, since the domain does not import runtime.
func conversionReview(t testing.TB, objs ...string) []byte {
	t.Helper()
	type request struct {
		UID               string            `json:"uid"`
		DesiredAPIVersion string            `json:"desiredAPIVersion"`
		Objects           []json.RawMessage `json:"objects"`
	}
	r := struct {
		metav1.TypeMeta `json:",inline"`
		Request         request `json:"request"`
	}{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  request{UID: "uid-2", DesiredAPIVersion: "cache.example.com/v2"},
	}
	for _, o := range objs {
		r.Request.Objects = append(r.Request.Objects, json.RawMessage(o))
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return b
}

// conversionResponse decodes o's response review.
func conversionResponse(t *testing.T, o webhook.Outcome) *apiextensionsv1.ConversionResponse {
	t.Helper()
	var r apiextensionsv1.ConversionReview
	require.NoError(t, json.Unmarshal(o.Body, &r), "%s", o.Body)
	require.Equal(t, "apiextensions.k8s.io/v1", r.APIVersion)
	require.Equal(t, "ConversionReview", r.Kind)
	require.NotNil(t, r.Response)
	require.Equal(t, "uid-2", string(r.Response.UID))
	return r.Response
}

// toV2 sets apiVersion, and fails on an object named bad.
var toV2 = convertFunc(func(_ context.Context, obj []byte, apiVersion string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	if md, _ := m["metadata"].(map[string]any); md["name"] == "bad" {
		return nil, errors.New("converting shop/bad: spec.size: not a number")
	}
	if md, _ := m["metadata"].(map[string]any); md["name"] == "array" {
		return []byte(`[]`), nil
	}
	if md, _ := m["metadata"].(map[string]any); md["name"] == "panic" {
		panic("boom")
	}
	m["apiVersion"] = apiVersion
	return json.Marshal(m)
})

func memcached(name string) string {
	return `{"apiVersion":"cache.example.com/v1","kind":"Memcached","metadata":{"namespace":"shop","name":"` + name + `"}}`
}

func TestConvert_converts_every_object_or_none(t *testing.T) {
	tests := []struct {
		name      string
		objs      []string
		status    int
		result    webhook.Result
		message   string
		converted []string
	}{
		{name: "every object", objs: []string{memcached("a"), memcached("b")}, status: 200, result: webhook.Allowed,
			converted: []string{`{"apiVersion":"cache.example.com/v2","kind":"Memcached","metadata":{"name":"a","namespace":"shop"}}`, `{"apiVersion":"cache.example.com/v2","kind":"Memcached","metadata":{"name":"b","namespace":"shop"}}`}},
		{name: "no object", status: 200, result: webhook.Allowed},
		{name: "the first error", objs: []string{memcached("a"), memcached("bad"), memcached("array")}, status: 200, result: webhook.Errored, message: "converting shop/bad: spec.size: not a number"},
		{name: "a conversion that is not an object", objs: []string{memcached("array")}, status: 200, result: webhook.Errored, message: "converting object 0 (shop/array) to cache.example.com/v2: the conversion is not a JSON object"},
		{name: "a panic", objs: []string{memcached("panic")}, status: 200, result: webhook.Panicked, message: "converting object 0 (shop/panic) to cache.example.com/v2: the conversion webhook panicked: boom"},
		// A list of many fails as a whole: the message says which stored
		// object to look at.
		{name: "a panic in a list of many", objs: []string{memcached("a"), memcached("b"), memcached("panic"), memcached("c")}, status: 200, result: webhook.Panicked,
			message: "converting object 2 (shop/panic) to cache.example.com/v2: the conversion webhook panicked: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := webhook.Convert(t.Context(), conversionReview(t, tt.objs...), toV2)
			require.Equal(t, tt.status, o.Status)
			require.Equal(t, tt.result, o.Result)
			require.Equal(t, tt.message, o.Message)
			require.Equal(t, len(tt.objs), o.Objects)
			r := conversionResponse(t, o)
			var got []string
			for _, c := range r.ConvertedObjects {
				got = append(got, string(c.Raw))
			}
			require.Equal(t, tt.converted, got)
			if tt.result == webhook.Allowed {
				require.Equal(t, metav1.StatusSuccess, r.Result.Status)
				return
			}
			require.Equal(t, metav1.StatusFailure, r.Result.Status)
			require.Equal(t, tt.message, r.Result.Message)
		})
	}
}

func TestConvert_names_the_kind_and_the_one_object(t *testing.T) {
	o := webhook.Convert(t.Context(), conversionReview(t, memcached("a")), toV2)
	require.Equal(t, []string{"cache.example.com", "v1", "Memcached", "shop", "a", "uid-2"}, []string{o.Group, o.Version, o.Kind, o.Namespace, o.Name, o.UID})
}

func TestConvert_answers_what_is_not_a_review_with_400(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"not JSON", `nope`, "decoding the ConversionReview"},
		{"another kind", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"AdmissionReview","request":{"desiredAPIVersion":"v2"}}`, `kind is "AdmissionReview", want "ConversionReview"`},
		{"another version", `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{"desiredAPIVersion":"v2"}}`, `apiVersion is "apiextensions.k8s.io/v1beta1"`},
		{"no request", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, "request is missing"},
		{"no desired version", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u"}}`, "desiredAPIVersion is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := webhook.Convert(t.Context(), []byte(tt.body), toV2)
			require.Equal(t, 400, o.Status)
			require.Equal(t, webhook.Errored, o.Result)
			require.Contains(t, o.Message, tt.want)
			require.True(t, json.Valid(o.Body))
		})
	}
}

func FuzzAdmit(f *testing.F) {
	f.Add(admissionReview(f, nil), true)
	f.Add(admissionReview(f, func(r *admissionv1.AdmissionReview) { r.Request.Object.Raw = []byte(`null`) }), true)
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":[1,2]}}`), true)
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), false)
	f.Add([]byte(`{`), false)
	// The Admitter returns the object with a label added, or panics on a
	// name of "panic", so that every branch is reached.
	a := admitFunc(func(_ context.Context, r ports.AdmissionRequest) (ports.AdmissionResult, error) {
		if r.Name == "panic" {
			panic("boom")
		}
		if r.Name == "deny" {
			return ports.AdmissionResult{Warnings: []string{r.Name}}, errors.New("denied")
		}
		var m map[string]any
		if json.Unmarshal(r.Object, &m) != nil || m == nil {
			return ports.AdmissionResult{Object: r.Object}, nil
		}
		m["added"] = true
		b, _ := json.Marshal(m)
		return ports.AdmissionResult{Object: b}, nil
	})
	f.Fuzz(func(t *testing.T, body []byte, mutating bool) {
		o := webhook.Admit(t.Context(), body, mutating, a)
		require.Contains(t, []int{200, 400, 500}, o.Status)
		require.True(t, json.Valid(o.Body), "%s", o.Body)
		require.NotEmpty(t, o.Result)
	})
}

func FuzzConvert(f *testing.F) {
	f.Add(conversionReview(f, memcached("a"), memcached("b")))
	f.Add(conversionReview(f, memcached("bad")))
	f.Add(conversionReview(f, memcached("array")))
	f.Add(conversionReview(f, `[1]`, `"s"`))
	f.Add([]byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"v2","objects":[null]}}`))
	f.Add([]byte(`]`))
	echo := convertFunc(func(_ context.Context, obj []byte, _ string) ([]byte, error) {
		if len(obj) > 0 && obj[0] == '"' {
			return toV2(context.Background(), obj, "v2")
		}
		return obj, nil
	})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, c := range []ports.Converter{toV2, echo} {
			o := webhook.Convert(t.Context(), body, c)
			require.Contains(t, []int{200, 400, 500}, o.Status)
			require.True(t, json.Valid(o.Body), "%s", o.Body)
			require.NotEmpty(t, o.Result)
		}
	})
}
