package otlp

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/contrib/propagators/b3"
	"go.opentelemetry.io/contrib/propagators/jaeger"
	"go.opentelemetry.io/contrib/propagators/ot"
	"go.opentelemetry.io/otel/propagation"
)

// propagatorNames are the supported values of OTEL_PROPAGATORS: the
// specification's, but for xray, whose Go module is deprecated.
func propagatorNames() []string {
	return []string{"tracecontext", "baggage", "b3", "b3multi", "jaeger", "ottrace", "none"}
}

// parsePropagators parses OTEL_PROPAGATORS: supported names,
// comma-separated, each kept once in its first place. none stands alone.
func parsePropagators(v string) ([]string, error) {
	var (
		names []string
		errs  []error
	)
	for item := range strings.SplitSeq(v, ",") {
		// Enum values are read in any case, as the specification says.
		name := strings.ToLower(strings.TrimSpace(item))
		switch {
		case name == "":
		case !slices.Contains(propagatorNames(), name):
			errs = append(errs, fmt.Errorf("%q is not supported: only %s", strings.TrimSpace(item), strings.Join(propagatorNames(), ", ")))
		case !slices.Contains(names, name):
			names = append(names, name)
		}
	}
	if slices.Contains(names, "none") && len(names) > 1 {
		errs = append(errs, fmt.Errorf("%q: none propagates nothing, so it can't be listed with others", v))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return names, nil
}

// Propagator returns the propagator OTEL_PROPAGATORS names, the listed
// ones in their order, for app.Telemetry's Propagator: nil when it isn't
// set, which leaves the App its default (tracecontext and baggage, the
// specification's), and one that propagates nothing for none. A name Read
// would not accept is skipped.
func (s Settings) Propagator() propagation.TextMapPropagator {
	if s.Propagators == nil {
		return nil
	}
	// Not nil for none: app would fill a nil one with its default.
	ps := []propagation.TextMapPropagator{}
	for _, name := range s.Propagators {
		switch name {
		case "tracecontext":
			ps = append(ps, propagation.TraceContext{})
		case "baggage":
			ps = append(ps, propagation.Baggage{})
		case "b3":
			ps = append(ps, b3.New(b3.WithInjectEncoding(b3.B3SingleHeader)))
		case "b3multi":
			ps = append(ps, b3.New(b3.WithInjectEncoding(b3.B3MultipleHeader)))
		case "jaeger":
			ps = append(ps, jaeger.Jaeger{})
		case "ottrace":
			ps = append(ps, ot.OT{})
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...)
}
