package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"runtime/debug"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	domain "github.com/loam-dev/loam/domain/webhook"
)

// ServeHTTP answers one request: a review POSTed to a Route's path. A
// panic anywhere in it, not only in the Admitter or the Converter, is
// answered 200 with a denial or a failed conversion (lastResort).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := s.route(r.URL.Path)
	if !ok {
		http.Error(w, fmt.Sprintf("no webhook is served at %s", r.URL.Path), http.StatusNotFound)
		return
	}
	start := time.Now()
	a := &answer{ResponseWriter: w}
	// A last resort, registered first so it runs last: a panic anywhere
	// below that escaped would have net/http close the connection, a
	// failed call, which FailurePolicy Ignore admits.
	defer func() {
		if v := recover(); v != nil {
			s.lastResort(rt, a, r, start, v, debug.Stack())
		}
	}()
	s.active.Add(r.Context(), 1, rt.active)
	defer s.active.Add(r.Context(), -1, rt.active)

	ctx := s.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := s.tracer.Start(ctx, rt.Type.verb(), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(rt.attrs...))
	defer span.End()
	// A scenario comes only from a trusted object, never from a request's
	// header: the review's own is stripped, as the Client strips one on
	// the wire, with loam.fit.strip on the review's span, whether failure
	// injection is on or off.
	ctx = s.faults.StripContext(ctx)

	o := s.review(ctx, rt, a, r)
	if o.Kind != "" {
		span.SetName(rt.Type.verb() + " " + o.Kind)
	}
	attrs := append(reviewAttributes(o), rt.attrs...)
	span.SetAttributes(attrs...)
	switch o.Result {
	case domain.Denied:
		s.emit(ctx, log.SeverityWarn, "admission denied", append(attrs, exceptionMessageKey.String(o.Message)))
	case domain.Errored:
		span.SetStatus(codes.Error, o.Message)
		s.emit(ctx, log.SeverityWarn, "review failed", append(attrs, exceptionMessageKey.String(o.Message)))
	case domain.Panicked:
		span.SetStatus(codes.Error, o.Message)
		exception := []attribute.KeyValue{
			exceptionTypeKey.String(fmt.Sprintf("%T", o.Panic)),
			exceptionMessageKey.String(fmt.Sprint(o.Panic)),
			exceptionStackKey.String(string(o.Stack)),
		}
		span.AddEvent("exception", trace.WithAttributes(exception...))
		s.emit(ctx, log.SeverityError, "webhook panicked", append(attrs, exception...))
	}
	s.duration.Record(ctx, time.Since(start).Seconds(), rt.outcomes[o.Result])
}

// review reads r's body, decides it with rt, and writes the answer,
// returning the Outcome. A request refused before it is decided is
// answered with its status and a message, and returned as an Errored
// Outcome saying why.
func (s *Server) review(ctx context.Context, rt *route, w *answer, r *http.Request) domain.Outcome {
	refuse := func(code int, msg string) domain.Outcome {
		http.Error(w, msg, code)
		return domain.Outcome{Status: code, Result: domain.Errored, Message: msg}
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return refuse(http.StatusMethodNotAllowed, fmt.Sprintf("webhook %s: method %s, want POST", rt.Name, r.Method))
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return refuse(http.StatusUnsupportedMediaType, fmt.Sprintf("webhook %s: Content-Type is %q, want application/json", rt.Name, r.Header.Get("Content-Type")))
	}
	if t := r.URL.Query().Get("timeout"); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return refuse(http.StatusBadRequest, fmt.Sprintf("webhook %s: the timeout parameter %q is not a positive duration", rt.Name, t))
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d,
			fmt.Errorf("webhook %s: the API server's timeout of %s for the review passed", rt.Name, d))
		defer cancel()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.max))
	w.body, w.read = body, true
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return refuse(http.StatusRequestEntityTooLarge, fmt.Sprintf("webhook %s: the review is larger than %d bytes", rt.Name, s.max))
		}
		return refuse(http.StatusBadRequest, fmt.Sprintf("webhook %s: reading the review: %v", rt.Name, err))
	}

	var o domain.Outcome
	switch rt.Type {
	case Conversion:
		o = domain.Convert(ctx, body, rt.Converter)
	default:
		o = domain.Admit(ctx, body, rt.Type == Mutating, rt.Admitter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(o.Status)
	// The API server may have gone: nothing is left to tell it.
	_, _ = w.Write(o.Body)
	return o
}
