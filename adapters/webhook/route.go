package webhook

import (
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	domain "github.com/loam-dev/loam/domain/webhook"
	"github.com/loam-dev/loam/ports"
)

// Type is what a Route's reviews are.
type Type int

// The Types of Route. The zero Type is none, a mistake New reports.
const (
	// Validating routes admission reviews to an Admitter whose result's
	// Object is ignored.
	Validating Type = iota + 1
	// Mutating routes admission reviews to an Admitter whose result's
	// Object becomes the response's JSON patch.
	Mutating
	// Conversion routes conversion reviews to a Converter.
	Conversion
)

// String returns the Type as TypeKey's value: validating, mutating or
// conversion, or Type(n) for another.
func (t Type) String() string {
	switch t {
	case Validating:
		return "validating"
	case Mutating:
		return "mutating"
	case Conversion:
		return "conversion"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// verb names a review of the Type in its span's name.
func (t Type) verb() string {
	switch t {
	case Validating:
		return "validate"
	case Mutating:
		return "mutate"
	}
	return "convert"
}

// Route is one webhook the Server serves: the reviews POSTed to Path.
type Route struct {
	// Path is where the API server POSTs the reviews, such as
	// /validate/cache.example.com/v1alpha1/memcacheds; it starts with a
	// slash. The Route is served at Path and at Path under any prefix,
	// such as /hooks/validate/…, which a Service's path or a URL's puts
	// in front of it in the configurations: the server need not be told
	// the prefix, so it can't be told a different one.
	Path string
	// Name names the webhook in telemetry, as NameKey's value, such as
	// the webhook configuration's name of it.
	Name string
	// Type is what the reviews are.
	Type Type
	// Admitter decides a Validating or Mutating Route's reviews; nil for
	// a Conversion Route.
	Admitter ports.Admitter
	// Converter converts a Conversion Route's objects; nil for the
	// others.
	Converter ports.Converter
}

// route is a Route with its data points' attributes, made once.
type route struct {
	Route
	attrs    []attribute.KeyValue // NameKey and TypeKey
	active   metric.AddOption
	outcomes map[domain.Result]metric.RecordOption
}

// route returns the Route served at path: the Route whose Path is path,
// or else the one whose Path is the longest suffix of path that starts
// at a slash, which is path with a prefix taken off.
func (s *Server) route(path string) (*route, bool) {
	for p := path; p != ""; {
		if rt, ok := s.routes[p]; ok {
			return rt, true
		}
		i := strings.IndexByte(p[1:], '/')
		if i < 0 {
			break
		}
		p = p[i+1:]
	}
	return nil, false
}
