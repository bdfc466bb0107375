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

// versionsOf returns MemcachedV1 with the given Versions and Conversion.
func versionsOf(conversion *kube.WebhookClient, versions ...kube.Version) kube.Resource[MemcachedV1Spec, MemcachedStatus] {
	r := MemcachedV1
	r.Versions, r.Conversion = versions, conversion
	return r
}

var convertHook = &kube.WebhookClient{URL: "https://127.0.0.1:9443"}

// alpha returns Memcached, v1alpha1, changed by change.
func alpha(change func(*kube.Resource[MemcachedSpec, MemcachedStatus])) kube.Resource[MemcachedSpec, MemcachedStatus] {
	r := Memcached
	change(&r)
	return r
}

func TestCRD_reports_every_mistake_in_Versions(t *testing.T) {
	type otherSpec struct {
		Other string `json:"other"`
	}
	mistyped := func(kube.Object[MemcachedSpec, MemcachedStatus], *kube.Object[otherSpec, MemcachedStatus]) error {
		return nil
	}
	mistypedDown := func(kube.Object[otherSpec, MemcachedStatus], *kube.Object[MemcachedSpec, MemcachedStatus]) error {
		return nil
	}
	for _, tc := range []struct {
		name string
		r    kube.Resource[MemcachedV1Spec, MemcachedStatus]
		want []string
	}{
		{"a zero Version", versionsOf(convertHook, kube.Version{}), []string{`Versions[0] (""): is a Version neither Spoke nor Unconverted made`}},
		{"another Group", versionsOf(convertHook, kube.Spoke(alpha(func(r *kube.Resource[MemcachedSpec, MemcachedStatus]) { r.Group = "other.example.com" }), memcachedToV1, memcachedFromV1)),
			[]string{`Versions[0] ("v1alpha1"): its Group "other.example.com" is not the storage version's "cache.example.com"`}},
		{"another Kind, Plural and Scope", versionsOf(convertHook, kube.Spoke(alpha(func(r *kube.Resource[MemcachedSpec, MemcachedStatus]) {
			r.Kind, r.Plural, r.Scope = "Cache", "caches", kube.Cluster
		}), memcachedToV1, memcachedFromV1)),
			[]string{`its Kind "Cache" is not the storage version's "Memcached"`, `its Plural "caches" is not the storage version's "memcacheds"`, `its Scope "Cluster" is not the storage version's "Namespaced"`}},
		{"other ShortNames and Categories", versionsOf(convertHook, kube.Spoke(alpha(func(r *kube.Resource[MemcachedSpec, MemcachedStatus]) {
			r.ShortNames, r.Categories = []string{"mcd"}, []string{"caches"}
		}), memcachedToV1, memcachedFromV1)),
			[]string{`its ShortNames ["mcd"] are not the storage version's ["mc"]`, `its Categories ["caches"] are not the storage version's ["all"]`}},
		{"Versions of its own", versionsOf(convertHook, kube.Spoke(alpha(func(r *kube.Resource[MemcachedSpec, MemcachedStatus]) {
			r.Versions = []kube.Version{kube.Unconverted(MemcachedV1beta1)}
		}), memcachedToV1, memcachedFromV1)), []string{`Versions[0] ("v1alpha1"): has Versions of its own`}},
		{"a Conversion of its own", versionsOf(convertHook, kube.Spoke(alpha(func(r *kube.Resource[MemcachedSpec, MemcachedStatus]) {
			r.Conversion = convertHook
		}), memcachedToV1, memcachedFromV1)), []string{`Versions[0] ("v1alpha1"): has a Conversion of its own`}},
		{"two versions of one name", versionsOf(convertHook, kube.Spoke(Memcached, memcachedToV1, memcachedFromV1), kube.Spoke(Memcached, memcachedToV1, memcachedFromV1)),
			[]string{`Versions[1] ("v1alpha1"): has the name of Versions[0]`}},
		{"the hub's name", versionsOf(nil, kube.Unconverted(alpha(func(r *kube.Resource[MemcachedSpec, MemcachedStatus]) { r.Version = "v1" }))),
			[]string{`Versions[0] ("v1"): has the name of the storage version`}},
		{"a nil up", versionsOf(convertHook, kube.Spoke(Memcached, nil, memcachedFromV1)), []string{`Versions[0] ("v1alpha1"): missing conversion: the function up is nil`}},
		{"a nil up and down", versionsOf(convertHook, kube.Spoke[MemcachedSpec, MemcachedStatus, MemcachedV1Spec, MemcachedStatus](Memcached, nil, nil)),
			[]string{`missing conversion: the functions up and down are nil`}},
		{"a mistyped conversion", versionsOf(convertHook, kube.Spoke(Memcached, mistyped, mistypedDown)),
			[]string{`Versions[0] ("v1alpha1"): mistyped conversion: its functions convert to and from Object[kube_test.otherSpec, kube_test.MemcachedStatus], but the storage version is Object[kube_test.MemcachedV1Spec, kube_test.MemcachedStatus]`}},
		{"an Unconverted of another schema", versionsOf(nil, kube.Unconverted(Memcached)),
			[]string{`Versions[0] ("v1alpha1"): is Unconverted, but its schema (of kube_test.MemcachedSpec and kube_test.MemcachedStatus) differs`}},
		{"an Unconverted of other Rules", versionsOf(nil, kube.Unconverted(func() kube.Resource[MemcachedV1beta1Spec, MemcachedStatus] {
			r := MemcachedV1beta1
			r.Rules = []kube.TypeRules{kube.Rules(&specV1beta1, kube.Field(&specV1beta1.Replicas).Minimum(1).Maximum(5)), r.Rules[1]}
			return r
		}())), []string{`Versions[0] ("v1beta1"): is Unconverted, but its schema`}},
		{"no Conversion for a Spoke", versionsOf(nil, kube.Spoke(Memcached, memcachedToV1, memcachedFromV1)), []string{"the conversion webhook is missing"}},
		{"a Conversion no version needs", versionsOf(convertHook, kube.Unconverted(MemcachedV1beta1)), []string{"the conversion webhook is set, but no version converts through one"}},
		{"a Conversion of one version", versionsOf(convertHook), []string{"the conversion webhook is set, but no version converts through one"}},
		{"a Conversion with mistakes", versionsOf(&kube.WebhookClient{URL: "http://example.com"}, kube.Spoke(Memcached, memcachedToV1, memcachedFromV1)),
			[]string{`Conversion.URL "http://example.com" is not https`}},
		{"a warning without Deprecated", versionsOf(nil, kube.Unconverted(func() kube.Resource[MemcachedV1beta1Spec, MemcachedStatus] {
			r := MemcachedV1beta1
			r.Deprecated = false
			return r
		}())), []string{`Versions[0] ("v1beta1"): the DeprecationWarning "cache.example.com/v1beta1 Memcached is deprecated; use cache.example.com/v1" is set, but the version isn't Deprecated`}},
		{"a version's own mistakes", versionsOf(convertHook, kube.Spoke(alpha(func(r *kube.Resource[MemcachedSpec, MemcachedStatus]) {
			r.Columns = []kube.PrinterColumn{kube.Column("", &spec.Size)}
		}), memcachedToV1, memcachedFromV1)), []string{`Versions[0] ("v1alpha1"): Columns[0] (""): has no name`}},
		{"all at once", versionsOf(nil, kube.Version{}, kube.Spoke(Memcached, nil, memcachedFromV1), kube.Unconverted(Memcached)),
			[]string{"is a Version neither", "missing conversion", "is Unconverted, but its schema", "the conversion webhook is missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.r.CRD()
			require.Error(t, err)
			require.ErrorContains(t, err, "kube: the CRD of Memcached: ")
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}
