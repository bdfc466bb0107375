package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	domain "github.com/loam-dev/loam/domain/webhook"
)

// answer is one request's http.ResponseWriter, which remembers what the
// last resort needs: whether the answer has begun, and the body read.
type answer struct {
	http.ResponseWriter
	// begun is true once a status or a byte was written: from then on
	// the answer is the one the API server gets.
	begun bool
	// body is the request's body, once review read it.
	body []byte
	// read is true once the body was read, in full or not.
	read bool
}

// WriteHeader writes code, and marks the answer begun.
func (a *answer) WriteHeader(code int) {
	a.begun = true
	a.ResponseWriter.WriteHeader(code)
}

// Write writes b, and marks the answer begun.
func (a *answer) Write(b []byte) (int, error) {
	a.begun = true
	return a.ResponseWriter.Write(b)
}

// lastResort answers the request r to rt whose handling panicked with v
// outside the Admitter or the Converter, which domain/webhook guards
// itself: in the Server's own code, its telemetry's, or a library's. An
// answer not yet begun is 200 with a review that denies the admission or
// fails the conversion, with the request's uid, since net/http would
// otherwise close the connection, a failed call that FailurePolicy
// Ignore admits. An answer begun is left to end as it is. Either way the
// panic is reported as a panicked review, as far as the telemetry that
// may have panicked lets it: a panic there is swallowed.
func (s *Server) lastResort(rt *route, a *answer, r *http.Request, start time.Time, v any, stack []byte) {
	message := fmt.Sprintf("the webhook panicked: %v", v)
	if !a.begun {
		if !a.read {
			// The panic came before the body was read: the uid is in it.
			_ = guarded(func() { a.body, _ = io.ReadAll(http.MaxBytesReader(a.ResponseWriter, r.Body, s.max)) })
		}
		a.Header().Set("Content-Type", "application/json")
		a.WriteHeader(http.StatusOK)
		_, _ = a.Write(panicReview(rt.Type, reviewUID(a.body), message))
	}
	_ = guarded(func() {
		ctx := context.WithoutCancel(r.Context())
		attrs := append([]attribute.KeyValue{OutcomeKey.String(string(domain.Panicked))}, rt.attrs...)
		s.emit(ctx, log.SeverityError, "webhook panicked", append(attrs,
			exceptionTypeKey.String(fmt.Sprintf("%T", v)),
			exceptionMessageKey.String(fmt.Sprint(v)),
			exceptionStackKey.String(string(stack)),
		))
		s.duration.Record(ctx, time.Since(start).Seconds(), rt.outcomes[domain.Panicked])
	})
}

// guarded calls f and returns what it panicked with, if anything: the
// last resort's own steps must not panic a second time.
func guarded(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// reviewUID returns the uid of the review body, or "" when body has
// none: a body that is not a review still gets a review, which the API
// server, which sent none, never reads.
func reviewUID(body []byte) string {
	var review struct {
		Request *struct {
			UID string `json:"uid"`
		} `json:"request"`
	}
	var uid string
	_ = guarded(func() {
		if json.Unmarshal(body, &review) == nil && review.Request != nil {
			uid = review.Request.UID
		}
	})
	return uid
}

// panicReview returns the review that answers a request to a Route of
// type t whose handling panicked: an admission denied, or a conversion
// failed, with message and the status 500 InternalError, for uid. It is
// made of strings alone, so it always encodes.
func panicReview(t Type, uid, message string) []byte {
	status := map[string]any{"status": "Failure", "message": message, "reason": "InternalError", "code": http.StatusInternalServerError}
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"response": map[string]any{"uid": uid, "allowed": false, "status": status},
	}
	if t == Conversion {
		review = map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
			"response": map[string]any{"uid": uid, "convertedObjects": []any{}, "result": status},
		}
	}
	b, _ := json.Marshal(review)
	return b
}
