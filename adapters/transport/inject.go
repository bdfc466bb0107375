package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/domain/points"
	"github.com/loam-dev/loam/domain/scenario"
	"github.com/loam-dev/loam/internal/reconciled"
)

// ApplyPatchYAML is the content type of a server-side apply in JSON or
// YAML, the only apply whose body the injection layer changes.
const ApplyPatchYAML = "application/apply-patch+yaml"

// InjectFaults returns the failure-injection layer, for Options.Inject. For
// every request whose context carries a scenario, it:
//
//  1. evaluates the request's injection point, as package points names it,
//     with faults.Inject, and carries out the fault: a delay is waited
//     inside the request's context; an abort, or a delay the context cuts
//     short, fails the request with an error wrapping the
//     *fault.InjectedError, before the layers below are reached, so no
//     token is fetched and nothing is sent; a status (fit.Fault.Status)
//     answers the request, after its delay, with the response the API
//     server would send, as answer builds it, and nothing is sent either;
//  2. strips the scenario's members from the request's baggage header,
//     every other member kept, with loam.fit.strip on the request's span;
//  3. carries the scenario on to a child: a server-side apply
//     (application/apply-patch+yaml) of an object, not of a subresource,
//     made in a context the controller marked with the reconciled object
//     (package internal/reconciled), whose body names that object in its
//     controller owner reference, has the mark's annotation set in its
//     body to the scenario's members as W3C baggage, replacing any value,
//     and is sent on as JSON. Package domain/scenario decides the rewrite;
//     this layer reads the body and turns YAML into JSON for it. Any other
//     request's body is sent as it is.
//
// A request whose context carries no scenario goes to the next layer
// untouched, with no allocation, unless its baggage header holds one of
// the Decoder's members anyway, set by hand: those are stripped, as in 2.
// While failure injection is off (fault.Injector.SetOn), a request whose
// context carries a scenario is treated so too: no point is evaluated and
// nothing is carried on, but the scenario is still stripped from its
// header. A delay that the switch, or the scenario's end, cuts short lets
// its request go on unfaulted, carrying nothing on once the switch is
// off. Every request goes on untouched when faults is inert.
//
// The error of a failed request names its type for OpenTelemetry as
// github.com/loam-dev/loam/app/fault.InjectedError, so the error.type of
// otelhttp's span is that, even when net/http then replaces the error with
// its own timeout error.
func InjectFaults(faults *fault.Injector) func(next http.RoundTripper) http.RoundTripper {
	var members []string
	if faults.Enabled() {
		members = faults.Decoder().Members()
	}
	return func(next http.RoundTripper) http.RoundTripper {
		return &injector{faults: faults, members: members, next: next}
	}
}

// injector is the failure-injection layer.
type injector struct {
	faults  *fault.Injector
	members []string // the Decoder's members, read once
	next    http.RoundTripper
}

func (i *injector) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if !i.faults.Carries(ctx) {
		if i.handSet(r.Header) {
			r = r.Clone(ctx)
			i.strip(ctx, r.Header)
		}
		return i.next.RoundTrip(r)
	}
	req := points.Parse(r.Method, r.URL.Path, r.URL.Query())
	point := req.Point()
	if err := i.faults.Inject(ctx, point); err != nil {
		closeBody(r)
		var injected *fault.InjectedError
		if errors.As(err, &injected) && injected.Fault.Status != 0 && injected.Cause == nil {
			return answer(r, req, injected), nil
		}
		return nil, err
	}

	r = r.Clone(ctx) // a RoundTripper must not change the request it is handed
	i.strip(ctx, r.Header)
	if req.Verb == points.Patch && req.IsObject() && isApplyYAML(r.Header.Get("Content-Type")) {
		if err := i.carryOn(ctx, r); err != nil {
			return nil, fmt.Errorf("kube: %s: %w", point, err)
		}
	}
	return i.next.RoundTrip(r)
}

// strip removes the Decoder's members from h's baggage header, keeping
// every other member exactly as it was written, and records loam.fit.strip
// on the span in ctx when it removed any. W3C Baggage lists a member
// within one header value, and never a comma inside one, so members are
// found by their keys without parsing the values.
func (i *injector) strip(ctx context.Context, h http.Header) {
	values := h.Values("Baggage")
	if len(values) == 0 {
		return
	}
	var kept []string
	stripped := false
	for _, v := range values {
		var members []string
		for m := range strings.SplitSeq(v, ",") {
			if i.owns(m) {
				stripped = true
				continue
			}
			members = append(members, m)
		}
		if v := strings.TrimSpace(strings.Join(members, ",")); v != "" {
			kept = append(kept, v)
		}
	}
	if !stripped {
		return
	}
	h.Del("Baggage")
	for _, v := range kept {
		h.Add("Baggage", v)
	}
	trace.SpanFromContext(ctx).AddEvent(fault.StripEvent)
}

// handSet reports whether h, of a request whose context carries no
// scenario, has a baggage header that holds one of the Decoder's members
// anyway, as one set by hand would: it is stripped too, so no scenario
// reaches the API server. It allocates nothing when h has no baggage.
func (i *injector) handSet(h http.Header) bool {
	if len(i.members) == 0 {
		return false
	}
	for _, v := range h["Baggage"] {
		for m := range strings.SplitSeq(v, ",") {
			if i.owns(m) {
				return true
			}
		}
	}
	return false
}

// owns reports whether the baggage list member m, such as
// " acme.fault=%7B…%7D;prop", is one of the Decoder's.
func (i *injector) owns(m string) bool {
	key := m
	if n := strings.IndexAny(key, "=;"); n >= 0 {
		key = key[:n]
	}
	key = strings.TrimSpace(key)
	for _, name := range i.members {
		if key == name {
			return true
		}
	}
	return false
}

// isApplyYAML reports whether contentType is a server-side apply's in JSON
// or YAML, whatever its parameters.
func isApplyYAML(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == ApplyPatchYAML
}

// carryOn sets the reconcile's scenario on the child r applies, when ctx is
// a reconcile's that carries one and r's body names the reconciled object
// as its controller. r's body is read, and sent on changed or not.
func (i *injector) carryOn(ctx context.Context, r *http.Request) error {
	mark, ok := reconciled.FromContext(ctx)
	// Checked again here: a delay that the switch cut short comes this
	// far, and nothing is carried on once failure injection is off.
	if !ok || mark.UID == "" || mark.Annotation == "" || !i.faults.On() {
		return nil
	}
	members := i.faults.Restrict(mark.Scenario)
	if members.Len() == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return fmt.Errorf("reading the apply's body: %w", err)
	}
	if annotated, ok := annotateChild(body, mark.UID, mark.Annotation, members.String()); ok {
		body = annotated
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}

// annotateChild returns body, an apply's JSON or YAML object, as JSON
// with the annotation set to value when it is uid's child, as
// scenario.AnnotateChild decides; it returns false, and body is to be sent
// as it is, otherwise. The domain reads JSON only, so a body that isn't a
// JSON object is read as YAML — kubectl and apply configurations write
// YAML's block style — and converted first; one that isn't YAML either is
// left for the API server to judge.
func annotateChild(body []byte, uid types.UID, annotation, value string) ([]byte, bool) {
	doc := body
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
		var err error
		if doc, err = yaml.YAMLToJSON(body); err != nil {
			return nil, false
		}
	}
	return scenario.AnnotateChild(doc, uid, annotation, value)
}
