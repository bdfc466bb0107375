package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/domain/points"
)

// conflictMessage is what the API server says of an update or a patch
// whose resourceVersion is stale.
const conflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// tooManyMessage is what the API server's max-in-flight and priority and
// fairness filters say when they turn a request away.
const tooManyMessage = "Too many requests, please try again later."

// answer returns the response the API server would send r, which req
// names, in place of the request, for the status injected holds: the
// status code, a JSON metav1.Status body with the reason and details
// apimachinery's own errors give that code (NotFound, Forbidden,
// AlreadyExists for a 409 to a create, Conflict for any other 409,
// TooManyRequests, InternalError, ServiceUnavailable, and the reason
// apierrors.NewGenericServerResponse gives any other code), and the Retry-After header when the fault has
// one. client-go reads it as it reads a real answer: it retries a 429 or a
// 5xx that has a Retry-After, and apierrors.IsConflict and the like hold
// of the error it returns. The message says the fault was injected, where,
// and by which experiment, so a person reading the error, or the Event it
// ends in, knows it was a rehearsal.
func answer(r *http.Request, req points.Request, injected *fault.InjectedError) *http.Response {
	f := injected.Fault
	code := f.Status
	// fit.Rule's check keeps it whole seconds; a Status's field is an
	// int32.
	retryAfter := int(min(f.RetryAfter/time.Second, math.MaxInt32))
	note := fmt.Sprintf("fault injected at point %q", injected.Point)
	if injected.Experiment != "" {
		note += fmt.Sprintf(", experiment %q", injected.Experiment)
	}
	gr := schema.GroupResource{Group: req.Group, Resource: req.Resource}

	var st *apierrors.StatusError
	switch {
	case code == http.StatusConflict && req.Verb == points.Create:
		st = apierrors.NewAlreadyExists(gr, req.Name)
	case code == http.StatusConflict:
		st = apierrors.NewConflict(gr, req.Name, errors.New(conflictMessage))
	case code == http.StatusNotFound:
		st = apierrors.NewNotFound(gr, req.Name)
	case code == http.StatusForbidden:
		st = apierrors.NewForbidden(gr, req.Name, errors.New(note))
	case code == http.StatusTooManyRequests:
		st = apierrors.NewTooManyRequests(tooManyMessage, retryAfter)
	case code == http.StatusInternalServerError:
		st = apierrors.NewInternalError(errors.New(note))
	case code == http.StatusServiceUnavailable:
		st = apierrors.NewServiceUnavailable(note)
	default:
		st = apierrors.NewGenericServerResponse(code, r.Method, gr, req.Name, note, retryAfter, false)
	}
	status := st.ErrStatus
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	status.Code = int32(code)
	if !strings.Contains(status.Message, note) {
		status.Message += " (" + note + ")"
	}
	if retryAfter > 0 {
		if status.Details == nil {
			status.Details = &metav1.StatusDetails{}
		}
		status.Details.RetryAfterSeconds = int32(retryAfter)
	}
	// A metav1.Status of plain fields always marshals.
	body, _ := json.Marshal(status)

	h := http.Header{"Content-Type": {"application/json"}}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		StatusCode:    code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}
