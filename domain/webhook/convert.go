package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/ports"
)

// The type of the reviews Convert reads and writes.
const (
	conversionAPIVersion = "apiextensions.k8s.io/v1"
	conversionKind       = "ConversionReview"
)

// conversionReview is the response ConversionReview as Convert writes it:
// apiextensionsv1's own type holds its objects as runtime.RawExtension,
// which the domain does not import, and json.RawMessage encodes the same.
type conversionReview struct {
	metav1.TypeMeta `json:",inline"`
	Response        conversionResponse `json:"response"`
}

type conversionResponse struct {
	UID              types.UID         `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           metav1.Status     `json:"result"`
}

// ObjectHeader is what a converter reads of an object before it knows
// its version: enough to route it, by apiVersion and kind, and to name
// it in an error.
type ObjectHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
}

// Convert converts the objects of the conversion review body to its
// desiredAPIVersion with c, and returns the response to write.
//
// A body that is not JSON, not an apiextensions.k8s.io/v1
// ConversionReview, or one without a request or a desiredAPIVersion gives
// a 400 Outcome whose Body is a metav1.Status saying why. Otherwise the
// Outcome is a 200 response review with the request's uid: Success and
// every object converted, in order; or Failure with the message of the
// first object c fails to convert, or whose conversion is not a JSON
// object, and no object at all, since the API server takes all or none. A
// panic of c, or of its error's Error, fails the review with a 200
// Outcome of a Failure review that carries the panic and its stack: a
// 5xx is a failed call, which FailurePolicy Ignore admits.
func Convert(ctx context.Context, body []byte, c ports.Converter) Outcome {
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return badRequest(fmt.Errorf("decoding the ConversionReview: %w", err))
	}
	if err := checkType("ConversionReview", review.TypeMeta, conversionAPIVersion, conversionKind); err != nil {
		return badRequest(err)
	}
	req := review.Request
	if req == nil {
		return badRequest(errors.New("ConversionReview: request is missing"))
	}
	if req.DesiredAPIVersion == "" {
		return badRequest(errors.New("ConversionReview: request.desiredAPIVersion is empty"))
	}

	o := Outcome{UID: string(req.UID), Objects: len(req.Objects)}
	if len(req.Objects) > 0 {
		var m ObjectHeader
		// An object that does not decode is named by its index below.
		if json.Unmarshal(req.Objects[0].Raw, &m) == nil {
			o.Group, o.Version = splitAPIVersion(m.APIVersion)
			o.Kind = m.Kind
			if len(req.Objects) == 1 {
				o.Namespace, o.Name = m.Metadata.Namespace, m.Metadata.Name
			}
		}
	}

	converted := make([]json.RawMessage, 0, len(req.Objects))
	var (
		err     error
		message string
		at      int // the object being converted, which a panic names
	)
	p := guard(func() {
		for i, obj := range req.Objects {
			at = i
			var out []byte
			out, err = convertOne(ctx, c, i, obj.Raw, req.DesiredAPIVersion)
			if err != nil {
				// Inside the guard: the end user's error may panic, as
				// a typed nil pointer's does.
				message = err.Error()
				return
			}
			converted = append(converted, out)
		}
	})
	resp := conversionResponse{UID: req.UID, ConvertedObjects: []json.RawMessage{}}
	switch {
	case p != nil:
		o.Result, o.Panic, o.Stack = Panicked, p.value, p.stack
		// A list fails as a whole on one object's panic: name that object,
		// as a failed conversion names it, or nothing tells which stored
		// object every list trips on.
		var m ObjectHeader
		_ = json.Unmarshal(req.Objects[at].Raw, &m)
		o.Message = fmt.Sprintf("converting object %d (%s) to %s: the conversion webhook panicked: %v",
			at, objectName(m.Metadata.Namespace, m.Metadata.Name), req.DesiredAPIVersion, p.value)
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: o.Message,
			Reason: metav1.StatusReasonInternalError, Code: statusInternalServerError}
		return o.respondConversion(statusOK, resp)
	case err != nil:
		o.Result, o.Message = Errored, message
		resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: o.Message}
		return o.respondConversion(statusOK, resp)
	}
	o.Result = Allowed
	resp.ConvertedObjects = converted
	resp.Result = metav1.Status{Status: metav1.StatusSuccess}
	return o.respondConversion(statusOK, resp)
}

// convertOne converts the review's object i to apiVersion with c, and
// checks the result is a JSON object, which the response must carry.
func convertOne(ctx context.Context, c ports.Converter, i int, obj []byte, apiVersion string) ([]byte, error) {
	out, err := c.Convert(ctx, obj, apiVersion)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil || m == nil {
		var m ObjectHeader
		_ = json.Unmarshal(obj, &m)
		return nil, fmt.Errorf("converting object %d (%s) to %s: the conversion is not a JSON object", i, objectName(m.Metadata.Namespace, m.Metadata.Name), apiVersion)
	}
	var compact bytes.Buffer
	// out is valid JSON, just checked.
	_ = json.Compact(&compact, out)
	return compact.Bytes(), nil
}

// splitAPIVersion splits group/version, or a core version, into its
// group and version.
func splitAPIVersion(apiVersion string) (group, version string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// respondConversion returns o answering code with the review of resp.
func (o Outcome) respondConversion(code int, resp conversionResponse) Outcome {
	body, err := json.Marshal(conversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: conversionAPIVersion, Kind: conversionKind},
		Response: resp,
	})
	if err != nil {
		// The objects are compacted JSON already, so this is never
		// expected; it still answers a Failure review, never a 5xx.
		o.Result = Errored
		o.Message = fmt.Sprintf("encoding the ConversionReview: %v", err)
		body, _ = json.Marshal(conversionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: conversionAPIVersion, Kind: conversionKind},
			Response: conversionResponse{UID: resp.UID, ConvertedObjects: []json.RawMessage{}, Result: metav1.Status{
				Status: metav1.StatusFailure, Message: o.Message, Reason: metav1.StatusReasonInternalError, Code: statusInternalServerError,
			}},
		})
		code = statusOK
	}
	o.Status, o.Body = code, body
	return o
}
