package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/webhook"
	"github.com/loam-dev/loam/ports"
)

// nilError is an error whose methods dereference their receiver, as an
// end user's error type returned as a typed nil pointer does.
type nilError struct{ msg string }

func (e *nilError) Error() string { return e.msg }

// panickyStatus is an APIStatus error whose Status panics.
type panickyStatus struct{}

func (panickyStatus) Error() string         { return "status" }
func (panickyStatus) Status() metav1.Status { panic("status boom") }

// A panic escaping Admit or Convert ends the request with no answer,
// which the API server takes for a failed call, admitted under
// FailurePolicy Ignore: the end user's error is their code too.
func TestAdmit_and_Convert_deny_with_200_when_the_error_panics(t *testing.T) {
	for name, err := range map[string]error{
		"a typed nil error":    (*nilError)(nil),
		"a status that panics": panickyStatus{},
	} {
		t.Run(name, func(t *testing.T) {
			a := admitFunc(func(context.Context, ports.AdmissionRequest) (ports.AdmissionResult, error) {
				return ports.AdmissionResult{}, err
			})
			var o webhook.Outcome
			require.NotPanics(t, func() { o = webhook.Admit(t.Context(), admissionReview(t, nil), false, a) })
			require.Equal(t, 200, o.Status)
			require.Equal(t, webhook.Panicked, o.Result)
			require.False(t, response(t, o).Allowed)
		})
	}
	t.Run("a converter's typed nil error", func(t *testing.T) {
		c := convertFunc(func(context.Context, []byte, string) ([]byte, error) { return nil, (*nilError)(nil) })
		var o webhook.Outcome
		require.NotPanics(t, func() { o = webhook.Convert(t.Context(), conversionReview(t, memcached("a")), c) })
		require.Equal(t, 200, o.Status)
		require.Equal(t, webhook.Panicked, o.Result)
		require.Equal(t, metav1.StatusFailure, conversionResponse(t, o).Result.Status)
	})
}

// A mutation of a request whose object is not a JSON object, or is null,
// is denied as an error, never a panic.
func TestAdmit_answers_200_to_a_mutation_of_an_odd_object(t *testing.T) {
	for _, c := range []struct{ name, before, after string }{
		{"null to object", `null`, `{"a":1}`},
		{"array to object", `[1,2]`, `{"a":1}`},
		{"number", `5`, `{"a":1}`},
		{"string", `"x"`, `{}`},
		{"deep", `{"a":{"b":[1,{"c":null}]}}`, `{"a":{"b":[{"c":1}]}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := admitFunc(func(context.Context, ports.AdmissionRequest) (ports.AdmissionResult, error) {
				return ports.AdmissionResult{Object: []byte(c.after)}, nil
			})
			body := admissionReview(t, func(r *admissionv1.AdmissionReview) { r.Request.Object.Raw = []byte(c.before) })
			var o webhook.Outcome
			require.NotPanics(t, func() { o = webhook.Admit(t.Context(), body, true, a) })
			require.Equal(t, 200, o.Status, "%s", o.Body)
		})
	}
}
