package crd

import (
	"encoding"
	"encoding/json"
	"reflect"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// quantityPattern is the pattern the API server's own schemas give a
// resource.Quantity.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// rawExtension names runtime.RawExtension, which the domain may not import:
// k8s.io/apimachinery/pkg/runtime is the scheme's package, not a value one.
var rawExtension = struct{ pkg, name string }{"k8s.io/apimachinery/pkg/runtime", "RawExtension"}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// builtin returns the schema of a type that encodes itself and whose
// schema loam knows: apimachinery's, and the standard library's time.Time
// and json.RawMessage.
func builtin(t reflect.Type) (apiextensionsv1.JSONSchemaProps, bool) {
	switch t {
	case reflect.TypeFor[metav1.Time](), reflect.TypeFor[metav1.MicroTime](), reflect.TypeFor[time.Time]():
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}, true
	case reflect.TypeFor[metav1.Duration]():
		return apiextensionsv1.JSONSchemaProps{Type: "string"}, true
	case reflect.TypeFor[resource.Quantity]():
		return apiextensionsv1.JSONSchemaProps{
			AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
			Pattern:      quantityPattern,
			XIntOrString: true,
		}, true
	case reflect.TypeFor[intstr.IntOrString]():
		return apiextensionsv1.JSONSchemaProps{
			AnyOf:        []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}},
			XIntOrString: true,
		}, true
	case reflect.TypeFor[metav1.Condition]():
		return condition(), true
	case reflect.TypeFor[metav1.ObjectMeta]():
		// An object's own metadata is the API server's to check. Nested,
		// as in a template, it is kept whole, so pruning doesn't empty it.
		return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}, true
	case reflect.TypeFor[apiextensionsv1.JSON](), reflect.TypeFor[json.RawMessage]():
		return apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}, true
	}
	if t.PkgPath() == rawExtension.pkg && t.Name() == rawExtension.name {
		return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}, true
	}
	return apiextensionsv1.JSONSchemaProps{}, false
}

// encodesItself returns the method by which t encodes itself, such as
// MarshalJSON or MarshalText, on t or on a pointer to it, or "" when
// encoding/json encodes t by its kind.
func encodesItself(t reflect.Type) string {
	pt := reflect.PointerTo(t)
	for _, m := range marshalerMethods {
		if _, ok := t.MethodByName(m); ok {
			return m
		}
		if _, ok := pt.MethodByName(m); ok {
			return m
		}
	}
	return ""
}

// condition is metav1.Condition's schema as the API server's own types and
// controller-gen define it, with the descriptions of its doc comments.
func condition() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{
		Description: "Condition contains details for one aspect of the current state of this API Resource.",
		Type:        "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"lastTransitionTime": {
				Description: "lastTransitionTime is the last time the condition transitioned from one status to another.\n" +
					"This should be when the underlying condition changed.  If that is not known, then using the time when the API field changed is acceptable.",
				Type:   "string",
				Format: "date-time",
			},
			"message": {
				Description: "message is a human readable message indicating details about the transition.\n" +
					"This may be an empty string.",
				Type:      "string",
				MaxLength: ptr[int64](32768),
			},
			"observedGeneration": {
				Description: "observedGeneration represents the .metadata.generation that the condition was set based upon.\n" +
					"For instance, if .metadata.generation is currently 12, but the .status.conditions[x].observedGeneration is 9, the condition is out of date\n" +
					"with respect to the current state of the instance.",
				Type:    "integer",
				Format:  "int64",
				Minimum: ptr[float64](0),
			},
			"reason": {
				Description: "reason contains a programmatic identifier indicating the reason for the condition's last transition.\n" +
					"Producers of specific condition types may define expected values and meanings for this field,\n" +
					"and whether the values are considered a guaranteed API.\n" +
					"The value should be a CamelCase string.\n" +
					"This field may not be empty.",
				Type:      "string",
				MaxLength: ptr[int64](1024),
				MinLength: ptr[int64](1),
				Pattern:   `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`,
			},
			"status": {
				Description: "status of the condition, one of True, False, Unknown.",
				Type:        "string",
				Enum: []apiextensionsv1.JSON{
					{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)},
				},
			},
			"type": {
				Description: "type of condition in CamelCase or in foo.example.com/CamelCase.",
				Type:        "string",
				MaxLength:   ptr[int64](316),
				Pattern:     `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`,
			},
		},
		Required: []string{"lastTransitionTime", "message", "reason", "status", "type"},
	}
}

// isBuiltin reports whether t has a schema built in, as builtin says.
func isBuiltin(t reflect.Type) bool {
	_, ok := builtin(t)
	return ok
}
