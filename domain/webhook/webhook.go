// Package webhook decides what an App's webhooks answer the API server,
// without any I/O: Admit turns the body of an admission.k8s.io/v1
// AdmissionReview into the response review an Admitter's decision makes,
// and Convert turns the body of an apiextensions.k8s.io/v1
// ConversionReview into the review of the objects a Converter converted
// (issue #21). adapters/webhook reads the bodies off HTTPS and writes the
// Outcomes back, with their spans, metrics and logs.
//
// Neither ever panics on its input, nor lets the Admitter's or the
// Converter's panic escape: every Outcome has a JSON body, a review when
// the request was one, and a metav1.Status when it was not.
package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Result says how a review ended, as the loam.kube.webhook.review.outcome
// attribute names it.
type Result string

// The Results of a review.
const (
	// Allowed is an admission the Admitter admitted, or a conversion of
	// every object.
	Allowed Result = "allowed"
	// Denied is an admission the Admitter denied with an error.
	Denied Result = "denied"
	// Errored is a review that could not be decided: a body that is not a
	// review, a conversion that failed, a patch that could not be
	// computed, or an Admitter that returned once its context had ended.
	Errored Result = "error"
	// Panicked is a review whose Admitter or Converter panicked.
	Panicked Result = "panic"
)

// Outcome is what one review came to: the HTTP response to write, and
// what the adapter's span, metrics and logs say about it.
type Outcome struct {
	// Status is the HTTP status code to answer with: 200 for every
	// review, allowed, denied, failed or panicked, since the API server
	// takes any other status for a failed call, which FailurePolicy
	// Ignore admits; 400 for a body that is not a review.
	Status int
	// Body is the JSON to answer with: the response review, or a
	// metav1.Status when the body was not a review.
	Body []byte
	// Group, Version and Kind are the reviewed object's: the admission
	// request's kind, or the first converted object's apiVersion and kind.
	Group, Version, Kind string
	// Namespace and Name are the reviewed object's, for an admission, or
	// for a conversion of one object.
	Namespace, Name string
	// Operation is the admission's, such as CREATE; empty for a
	// conversion.
	Operation string
	// UID identifies the review.
	UID string
	// Result says how the review ended.
	Result Result
	// Message is why a review was denied or failed; empty when it was
	// allowed.
	Message string
	// Warnings are those returned to the client.
	Warnings []string
	// Objects counts the objects a conversion was asked to convert.
	Objects int
	// Panic and Stack are the panic's value and the goroutine's stack
	// when the Result is Panicked.
	Panic any
	Stack []byte
}

// The HTTP status codes an Outcome answers with, spelled here because
// net/http is I/O the domain does not import.
const (
	statusOK                  = 200
	statusBadRequest          = 400
	statusForbidden           = 403
	statusInternalServerError = 500
)

// apiStatus is what an error of k8s.io/apimachinery/pkg/api/errors is,
// matched without importing that package: its Status keeps its code and
// reason in a denial.
type apiStatus interface {
	Status() metav1.Status
}

// badRequest returns the Outcome of a body that is not the review it
// should be, whose Body is a metav1.Status naming the mistake.
func badRequest(err error) Outcome {
	return failure(statusBadRequest, metav1.StatusReasonBadRequest, err)
}

// failure returns an Outcome with code and a metav1.Status body carrying
// err's message.
func failure(code int, reason metav1.StatusReason, err error) Outcome {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Message:  err.Error(),
		Reason:   reason,
		Code:     int32(code),
	}
	// A Status of strings and an int always encodes.
	body, _ := json.Marshal(st)
	return Outcome{Status: code, Body: body, Result: Errored, Message: st.Message}
}

// checkType reports a mistake in a review's apiVersion and kind, each
// named with what it should have been.
func checkType(what string, t metav1.TypeMeta, apiVersion, kind string) error {
	var errs []error
	if t.APIVersion != apiVersion {
		errs = append(errs, fmt.Errorf("%s: apiVersion is %q, want %q", what, t.APIVersion, apiVersion))
	}
	if t.Kind != kind {
		errs = append(errs, fmt.Errorf("%s: kind is %q, want %q", what, t.Kind, kind))
	}
	return errors.Join(errs...)
}

// recovered holds a panic's value and stack, once call returned.
type recovered struct {
	value any
	stack []byte
}

// guard calls f, returning what it panicked with, if anything: the
// Admitter and the Converter are the end user's code, and one bad object
// must not end the App.
func guard(f func()) (p *recovered) {
	defer func() {
		if v := recover(); v != nil {
			p = &recovered{value: v, stack: debug.Stack()}
		}
	}()
	f()
	return nil
}
