package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/propagation"

	"github.com/loam-dev/loam/adapters/webhook"
)

// panickingPropagator panics as it extracts a review's trace context,
// before the review's body is read: a bug outside the Admitter.
type panickingPropagator struct{ propagation.TextMapPropagator }

func (panickingPropagator) Extract(context.Context, propagation.TextMapCarrier) context.Context {
	panic("boom in the Propagator")
}

// panickingLogger panics as it emits a denial's record, after the
// answer was written.
type panickingLogger struct{ log.Logger }

func (l panickingLogger) Emit(ctx context.Context, r log.Record) {
	if r.Body().AsString() == "admission denied" {
		panic("boom in the Logger")
	}
	l.Logger.Emit(ctx, r)
}

// conversionResponse is what the tests read of a response
// ConversionReview.
type conversionResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   struct {
		UID              string            `json:"uid"`
		ConvertedObjects []json.RawMessage `json:"convertedObjects"`
		Result           struct {
			Status  string `json:"status"`
			Message string `json:"message"`
			Code    int    `json:"code"`
		} `json:"result"`
	} `json:"response"`
}

// A panic outside the Admitter and the Converter, which domain/webhook
// guards, would have net/http close the connection: a failed call, which
// FailurePolicy Ignore admits. The last resort answers 200 with a denial
// or a failed conversion for the review's uid, unless the answer was
// written already, which then reaches the API server whole.
func TestServer_answers_a_panic_outside_the_Admitter_with_200(t *testing.T) {
	propagator := func(c *webhook.Config) { c.Propagator = panickingPropagator{c.Propagator} }
	logger := func(c *webhook.Config) { c.Logger = panickingLogger{c.Logger} }
	conversion := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c1","desiredAPIVersion":"cache.example.com/v2","objects":[` + memcached("a") + `]}}`
	tests := []struct {
		name       string
		with       func(*webhook.Config)
		path, body string
		wantUID    string
		// want is the admission's status message; "" for a conversion.
		want, wantConversion, wantPanic string
	}{
		{name: "an admission, before its body is read", with: propagator, path: validatePath, body: admissionReview("ok"), wantUID: "uid-ok",
			want: "the webhook panicked: boom in the Propagator", wantPanic: "boom in the Propagator"},
		{name: "a conversion, before its body is read", with: propagator, path: convertPath, body: conversion,
			wantConversion: "the webhook panicked: boom in the Propagator", wantPanic: "boom in the Propagator"},
		{name: "a denial, after it was answered", with: logger, path: validatePath, body: admissionReview("deny"), wantUID: "uid-deny",
			want: "spec.size: must be at most 10", wantPanic: "boom in the Logger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := start(t, tt.with)
				resp, body := f.review(tt.path, tt.body)
				require.Equal(t, http.StatusOK, resp.StatusCode, "a 5xx, or no answer, fails open under FailurePolicy Ignore: %s", body)
				require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				if tt.wantConversion != "" {
					var r conversionResponse
					require.NoError(t, json.Unmarshal([]byte(body), &r), body)
					require.Equal(t, "ConversionReview", r.Kind)
					require.Equal(t, "c1", r.Response.UID, "the API server takes no review of another uid")
					require.Equal(t, "Failure", r.Response.Result.Status)
					require.Equal(t, tt.wantConversion, r.Response.Result.Message)
					require.Empty(t, r.Response.ConvertedObjects)
				} else {
					r := decode(t, body).Response
					require.False(t, r.Allowed)
					require.Equal(t, tt.wantUID, r.UID, "the API server takes no review of another uid")
					require.Equal(t, tt.want, r.Status.Message)
				}
				require.Equal(t, []string{tt.wantPanic}, f.telemetry.ExceptionMessages("webhook panicked"))
			})
		})
	}
}
