package kube_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/kube"
)

// NoStatus is the status of a test resource whose spec is what the test
// is about.
type NoStatus struct{}

// thing is a test resource of spec S, constrained by rules.
func thing[S any](rules ...kube.TypeRules) kube.Resource[S, NoStatus] {
	return kube.Resource[S, NoStatus]{
		Group:   "test.loam.dev",
		Version: "v1",
		Kind:    "Thing",
		Plural:  "things",
		Scope:   kube.Namespaced,
		Rules:   rules,
	}
}

// specYAML returns the YAML of the spec schema of thing[S](rules...).
func specYAML[S any](t *testing.T, rules ...kube.TypeRules) string {
	t.Helper()
	crd, err := thing[S](rules...).CRD()
	require.NoError(t, err)
	out, err := yaml.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"])
	require.NoError(t, err)
	return string(out)
}

// The corpus: one Go type for each thing the schema reflects.

type Scalars struct {
	Bool     bool          `json:"bool"`
	Int      int           `json:"int"`
	Int8     int8          `json:"int8"`
	Int16    int16         `json:"int16"`
	Int32    int32         `json:"int32"`
	Int64    int64         `json:"int64"`
	Uint     uint          `json:"uint"`
	Uint8    uint8         `json:"uint8"`
	Uint64   uint64        `json:"uint64"`
	Uintptr  uintptr       `json:"uintptr"`
	Float32  float32       `json:"float32"`
	Float64  float64       `json:"float64"`
	String   string        `json:"string"`
	Named    Phase         `json:"named"`
	Duration time.Duration `json:"duration"`
	Bytes    []byte        `json:"bytes"`
	Pointer  *int32        `json:"pointer"`
	PtrPtr   **string      `json:"ptrPtr,omitempty"`
}

type Phase string

type Tags struct {
	Named       string `json:"named"`
	Untagged    string
	OnlyOptions string `json:",omitempty"`
	Skipped     string `json:"-"`
	Dash        string `json:"-,"` //nolint:staticcheck // a field encoding/json names "-", as the schema must
	OmitEmpty   string `json:"omitEmpty,omitempty"`
	OmitZero    string `json:"omitZero,omitzero"`
	QuotedInt   int64  `json:"quotedInt,string"`
	QuotedBool  bool   `json:"quotedBool,string"`
	QuotedPtr   *int   `json:"quotedPtr,string,omitempty"`
	QuotedSlice []int  `json:"quotedSlice,string"` //nolint:staticcheck // the option encoding/json ignores, as the schema must
	unexported  string //nolint:unused // encoding/json skips it, as the schema must
}

type Collections struct {
	Strings []string            `json:"strings"`
	Array   [2]int32            `json:"array"`
	Matrix  [][]bool            `json:"matrix"`
	Labels  map[string]string   `json:"labels"`
	ByPhase map[Phase][]Port    `json:"byPhase"`
	ByKey   map[TextKey]float64 `json:"byKey"`
	Ports   []Port              `json:"ports,omitempty"`
}

// TextKey encodes itself as text, so encoding/json takes it as a map key.
type TextKey struct{ A, B string }

func (k TextKey) MarshalText() ([]byte, error) { return []byte(k.A + "/" + k.B), nil }

type Port struct {
	Name   string `json:"name"`
	Number int32  `json:"number"`
}

type Base struct {
	Owner  string `json:"owner"`
	Shared string `json:"shared"`
}

type Extra struct {
	Note string `json:"note"`
}

type Deep struct {
	Base
	Level int `json:"level"`
}

type Embedding struct {
	Base
	*Extra
	Named  Deep   `json:"named"`
	Shared string `json:"shared,omitempty"`
	Phase
}

type Dominance struct {
	Deep
	Tagged
	Level int `json:"level,omitempty"`
}

type Tagged struct {
	Owner string `json:"owner"`
	Other string `json:"other"`
}

type Builtins struct {
	Time        metav1.Time          `json:"time"`
	TimePtr     *metav1.Time         `json:"timePtr,omitempty"`
	Micro       metav1.MicroTime     `json:"micro"`
	Duration    metav1.Duration      `json:"duration"`
	Quantity    resource.Quantity    `json:"quantity"`
	IntOrString intstr.IntOrString   `json:"intOrString"`
	Raw         runtime.RawExtension `json:"raw"`
	JSON        apiextensionsv1.JSON `json:"json"`
	Message     json.RawMessage      `json:"message"`
	GoTime      time.Time            `json:"goTime"`
	Metadata    metav1.ObjectMeta    `json:"metadata"`
	Selector    metav1.LabelSelector `json:"selector"`
}

func TestResource_CRD_reflects_the_schema_as_encoding_json_encodes(t *testing.T) {
	for _, c := range []struct {
		name string
		got  func(*testing.T, ...kube.TypeRules) string
		want string
	}{
		{"scalars, bytes and pointers", specYAML[Scalars], `properties:
  bool:
    type: boolean
  bytes:
    format: byte
    nullable: true
    type: string
  duration:
    format: int64
    type: integer
  float32:
    type: number
  float64:
    type: number
  int:
    type: integer
  int8:
    type: integer
  int16:
    type: integer
  int32:
    format: int32
    type: integer
  int64:
    format: int64
    type: integer
  named:
    type: string
  pointer:
    format: int32
    nullable: true
    type: integer
  ptrPtr:
    type: string
  string:
    type: string
  uint:
    type: integer
  uint8:
    type: integer
  uint64:
    type: integer
  uintptr:
    type: integer
required:
- bool
- bytes
- duration
- float32
- float64
- int
- int16
- int32
- int64
- int8
- named
- pointer
- string
- uint
- uint64
- uint8
- uintptr
type: object
`},
		{"json tags", specYAML[Tags], `properties:
  '-':
    type: string
  OnlyOptions:
    type: string
  Untagged:
    type: string
  named:
    type: string
  omitEmpty:
    type: string
  omitZero:
    type: string
  quotedBool:
    type: string
  quotedInt:
    type: string
  quotedPtr:
    type: string
  quotedSlice:
    items:
      type: integer
    nullable: true
    type: array
required:
- '-'
- Untagged
- named
- quotedBool
- quotedInt
- quotedSlice
type: object
`},
		{"slices, arrays and maps", specYAML[Collections], `properties:
  array:
    items:
      format: int32
      type: integer
    type: array
  byKey:
    additionalProperties:
      type: number
    nullable: true
    type: object
  byPhase:
    additionalProperties:
      items:
        properties:
          name:
            type: string
          number:
            format: int32
            type: integer
        required:
        - name
        - number
        type: object
      type: array
    nullable: true
    type: object
  labels:
    additionalProperties:
      type: string
    nullable: true
    type: object
  matrix:
    items:
      items:
        type: boolean
      type: array
    nullable: true
    type: array
  ports:
    items:
      properties:
        name:
          type: string
        number:
          format: int32
          type: integer
      required:
      - name
      - number
      type: object
    type: array
  strings:
    items:
      type: string
    nullable: true
    type: array
required:
- array
- byKey
- byPhase
- labels
- matrix
- strings
type: object
`},
		{"embedded structs are inlined, a named one nests", specYAML[Embedding], `properties:
  Phase:
    type: string
  named:
    properties:
      level:
        type: integer
      owner:
        type: string
      shared:
        type: string
    required:
    - level
    - owner
    - shared
    type: object
  note:
    type: string
  owner:
    type: string
  shared:
    type: string
required:
- Phase
- named
- owner
type: object
`},
		{"the shallowest field wins, then the tagged one", specYAML[Dominance], `properties:
  level:
    type: integer
  other:
    type: string
  owner:
    type: string
  shared:
    type: string
required:
- other
- owner
- shared
type: object
`},
		{"apimachinery's types and the standard library's that encode themselves", specYAML[Builtins], `properties:
  duration:
    type: string
  goTime:
    format: date-time
    type: string
  intOrString:
    anyOf:
    - type: integer
    - type: string
    x-kubernetes-int-or-string: true
  json:
    nullable: true
    x-kubernetes-preserve-unknown-fields: true
  message:
    nullable: true
    x-kubernetes-preserve-unknown-fields: true
  metadata:
    type: object
    x-kubernetes-preserve-unknown-fields: true
  micro:
    format: date-time
    nullable: true
    type: string
  quantity:
    anyOf:
    - type: integer
    - type: string
    pattern: ^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$
    x-kubernetes-int-or-string: true
  raw:
    nullable: true
    type: object
    x-kubernetes-preserve-unknown-fields: true
  selector:
    properties:
      matchExpressions:
        items:
          properties:
            key:
              type: string
            operator:
              type: string
            values:
              items:
                type: string
              type: array
          required:
          - key
          - operator
          type: object
        type: array
      matchLabels:
        additionalProperties:
          type: string
        type: object
    type: object
  time:
    format: date-time
    nullable: true
    type: string
  timePtr:
    format: date-time
    type: string
required:
- duration
- goTime
- intOrString
- json
- message
- metadata
- micro
- quantity
- raw
- selector
- time
type: object
`},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.got(t))
		})
	}
}

var _ = regexp.MustCompile
