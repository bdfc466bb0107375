package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/jsonpatch"
	"github.com/loam-dev/loam/ports"
)

// The type of the reviews Admit reads and writes.
const (
	admissionAPIVersion = "admission.k8s.io/v1"
	admissionKind       = "AdmissionReview"
)

// Admit decides the admission review body with a, as a mutating webhook's
// when mutating is true, and returns the response to write.
//
// A body that is not JSON, not an admission.k8s.io/v1 AdmissionReview, or
// one without a request gives a 400 Outcome whose Body is a metav1.Status
// saying why. Otherwise a's decision gives a 200 response review with the
// request's uid: allowed with a's warnings when a returns no error; denied
// when it does, with the warnings too and a status carrying the error's
// code, reason and message when the error is an API status error of
// k8s.io/apimachinery, or code 403 and its message otherwise. A mutating
// webhook's response carries the JSON patch from the request's object to
// the result's Object, none when that is nil or equal. A panic of a, or
// of its error's Error or Status, denies the request with a 200 Outcome
// that carries the panic and its stack, and a denial whose status says
// 500 InternalError, as does a result's Object that is not a JSON
// object: the API server reads the
// HTTP status first, and a 5xx is a failed call, which FailurePolicy
// Ignore admits. Only a review denies for sure.
func Admit(ctx context.Context, body []byte, mutating bool, a ports.Admitter) Outcome {
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return badRequest(fmt.Errorf("decoding the AdmissionReview: %w", err))
	}
	if err := checkType("AdmissionReview", review.TypeMeta, admissionAPIVersion, admissionKind); err != nil {
		return badRequest(err)
	}
	req := review.Request
	if req == nil {
		return badRequest(errors.New("AdmissionReview: request is missing"))
	}

	o := Outcome{
		Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind,
		Namespace: req.Namespace, Name: req.Name,
		Operation: string(req.Operation), UID: string(req.UID),
	}
	r := request(req)

	var (
		result ports.AdmissionResult
		err    error
		st     *metav1.Status
	)
	// The error is the end user's too: its Error or Status may panic, as
	// a typed nil pointer's does, and a panic that escapes answers
	// nothing, which FailurePolicy Ignore admits.
	if p := guard(func() {
		if result, err = a.Admit(ctx, r); err != nil {
			st = status(err)
		}
	}); p != nil {
		o.Result, o.Panic, o.Stack = Panicked, p.value, p.stack
		o.Message = fmt.Sprintf("the webhook panicked: %v", p.value)
		return o.respond(statusOK, denial(req, &metav1.Status{
			Status: metav1.StatusFailure, Message: o.Message,
			Reason: metav1.StatusReasonInternalError, Code: statusInternalServerError,
		}, nil))
	}
	o.Warnings = result.Warnings

	if err != nil {
		o.Result, o.Message = Denied, st.Message
		if ctx.Err() != nil {
			// The API server has stopped waiting: this is a timeout, not
			// the end user's decision.
			o.Result = Errored
		}
		return o.respond(statusOK, denial(req, st, result.Warnings))
	}

	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Warnings: result.Warnings}
	if mutating && result.Object != nil && len(req.Object.Raw) > 0 {
		patch, err := jsonpatch.Diff(req.Object.Raw, result.Object)
		if err != nil {
			o.Result = Errored
			o.Message = fmt.Sprintf("computing the patch of %s: %v", objectName(req.Namespace, req.Name), err)
			return o.respond(statusOK, denial(req, &metav1.Status{
				Status: metav1.StatusFailure, Message: o.Message,
				Reason: metav1.StatusReasonInternalError, Code: statusInternalServerError,
			}, result.Warnings))
		}
		if !bytes.Equal(patch, []byte("[]")) {
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = patch, &pt
		}
	}
	o.Result = Allowed
	return o.respond(statusOK, resp)
}

// request returns what the Admitter is asked about req.
func request(req *admissionv1.AdmissionRequest) ports.AdmissionRequest {
	r := ports.AdmissionRequest{
		UID:   string(req.UID),
		Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind,
		Resource: req.Resource.Resource, SubResource: req.SubResource,
		Namespace: req.Namespace, Name: req.Name,
		Operation: string(req.Operation),
		Object:    nonNull(req.Object.Raw), OldObject: nonNull(req.OldObject.Raw),
		DryRun:   req.DryRun != nil && *req.DryRun,
		UserName: req.UserInfo.Username,
		Groups:   req.UserInfo.Groups,
	}
	return r
}

// nonNull returns raw, or nil when it is JSON's null, which is how a
// review says there is no object.
func nonNull(raw []byte) []byte {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}

// denial returns the response denying req with st and warnings.
func denial(req *admissionv1.AdmissionRequest, st *metav1.Status, warnings []string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: false, Result: st, Warnings: warnings}
}

// status returns the status a denial by err carries.
func status(err error) *metav1.Status {
	var as apiStatus
	if errors.As(err, &as) {
		st := as.Status()
		st.Status = metav1.StatusFailure
		if st.Message == "" {
			st.Message = err.Error()
		}
		if st.Code == 0 {
			st.Code = statusForbidden
		}
		return &metav1.Status{Status: st.Status, Message: st.Message, Reason: st.Reason, Code: st.Code, Details: st.Details}
	}
	return &metav1.Status{
		Status: metav1.StatusFailure, Message: err.Error(),
		Reason: metav1.StatusReasonForbidden, Code: statusForbidden,
	}
}

// respond returns o answering code with the review of resp.
func (o Outcome) respond(code int, resp *admissionv1.AdmissionResponse) Outcome {
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionAPIVersion, Kind: admissionKind},
		Response: resp,
	}
	body, err := json.Marshal(review)
	if err != nil {
		// Only a Details field of an end user's status could fail to
		// encode; the review is then denied with a status of strings
		// alone, which always encodes, and still answered 200, so that
		// no failure policy admits it.
		o.Result = Errored
		o.Message = fmt.Sprintf("encoding the AdmissionReview of %s: %v", objectName(o.Namespace, o.Name), err)
		review.Response = &admissionv1.AdmissionResponse{UID: resp.UID, Result: &metav1.Status{
			Status: metav1.StatusFailure, Message: o.Message,
			Reason: metav1.StatusReasonInternalError, Code: statusInternalServerError,
		}}
		body, _ = json.Marshal(review)
		code = statusOK
	}
	o.Status, o.Body = code, body
	return o
}

// objectName names an object as namespace/name, or name when it is
// cluster-scoped, or "the object" when it has no name yet.
func objectName(namespace, name string) string {
	switch {
	case name == "":
		return "the object"
	case namespace == "":
		return name
	}
	return namespace + "/" + name
}
