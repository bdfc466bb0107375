package fault

import (
	"fmt"
	"reflect"

	"github.com/loam-dev/loam/app/fault/fit"
)

// InjectedError is the failure an injected fault causes: an abort, a
// status, or a delay that the call's context cut short. It is what a dependency's client
// returns in place of the call, so the code that meets it reacts as it would
// to the real failure.
type InjectedError struct {
	// Point is the injection point that met the fault.
	Point string
	// Fault is the fault the point met.
	Fault fit.Fault
	// Cause is the context's cause when the context cut the fault's delay
	// short, and nil for an abort or a status.
	Cause error
	// Experiment is the ID of the scenario that injected it, or "".
	Experiment string
}

// Error names the point and what happened there, and the experiment,
// when the scenario has an ID.
func (e *InjectedError) Error() string {
	if e.Experiment != "" {
		return fmt.Sprintf("%s (experiment %q)", e.message(), e.Experiment)
	}
	return e.message()
}

func (e *InjectedError) message() string {
	if e.Cause != nil {
		return fmt.Sprintf("fault: injected delay of %s at point %q cut short: %v", e.Fault.Delay, e.Point, e.Cause)
	}
	what := "abort"
	if e.Fault.Status != 0 {
		what = fmt.Sprintf("status %d", e.Fault.Status)
	}
	if e.Fault.Delay > 0 {
		return fmt.Sprintf("fault: injected %s, after a delay of %s, at point %q", what, e.Fault.Delay, e.Point)
	}
	return fmt.Sprintf("fault: injected %s at point %q", what, e.Point)
}

// Unwrap returns the context's cause for a delay cut short, so errors.Is
// finds context.DeadlineExceeded or context.Canceled in it, and nil for an
// abort or a status.
func (e *InjectedError) Unwrap() error { return e.Cause }

// ErrorType names the error's type for OpenTelemetry's error.type
// attribute, as instrumentation such as otelhttp reads it from an error:
// github.com/loam-dev/loam/app/fault.InjectedError, on a request's span and
// in its metrics alike.
func (e *InjectedError) ErrorType() string { return ErrorType(e) }

// ErrorType returns the value of the error.type attribute OpenTelemetry's
// semantic conventions give err: the package path and name of err's own
// type, without a pointer, such as
// github.com/loam-dev/loam/app/fault.InjectedError. It doesn't look
// inside a wrapped error; use errors.As first to name one. A nil err has
// no type, and returns "".
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.PkgPath() == "" || t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}
