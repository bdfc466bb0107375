package kube_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/kube"
)

// Server uses every constraint, on fields of its own, promoted ones and
// those of the types it holds.
type Server struct {
	Name     string               `json:"name"`
	Replicas *int32               `json:"replicas,omitempty"`
	Ratio    float64              `json:"ratio"`
	Mode     Mode                 `json:"mode"`
	Tags     []string             `json:"tags,omitempty"`
	Labels   map[string]string    `json:"labels,omitempty"`
	Ports    []Port               `json:"ports"`
	Main     *Port                `json:"main"`
	Template Template             `json:"template"`
	Retries  int                  `json:"retries,string"`
	Config   runtime.RawExtension `json:"config,omitempty"`
	Since    string               `json:"since,omitempty"`
	Limits
}

// Mode is a named string whose Rules constrain it wherever it appears.
type Mode string

// Limits is embedded in Server: its fields and its CEL rule are Server's.
type Limits struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// Template nests a Port, which Port's Rules constrain there too.
type Template struct {
	Port  Port              `json:"port"`
	Extra map[string]string `json:"extra,omitempty"`
}

func int32Ptr(v int32) *int32 { return &v }

var (
	server   Server
	port     Port
	mode     Mode
	limits   Limits
	template Template

	serverRules = []kube.TypeRules{
		kube.Rules(&server,
			kube.Field(&server.Name).MinLength(1).MaxLength(63).Pattern(regexp.MustCompile(`^[a-z]+$`)),
			kube.Field(&server.Replicas).Minimum(int32Ptr(0)).Maximum(int32Ptr(10)).Nullable(),
			kube.Field(&server.Ratio).Minimum(0).ExclusiveMinimum().Maximum(1).ExclusiveMaximum().MultipleOf(0.125),
			kube.Field(&server.Mode).Default("safe"),
			kube.Field(&server.Tags).MinItems(1).MaxItems(8).ListType(kube.SetList).Validation("self.all(t, t.size() < 16)", "tags are short"),
			kube.Field(&server.Labels).MinProperties(1).MaxProperties(4).MapType(kube.AtomicMap).Required(),
			kube.Field(&server.Ports).ListMap("name").Description("The ports it listens on."),
			kube.Field(&server.Main).Optional(),
			kube.Field(&server.Retries).Default(3),
			kube.Field(&server.Config).EmbeddedResource(),
			kube.Field(&server.Since).Format("date-time"),
			kube.Field(&server.Min).Minimum(0),
		).Description("A server.").Validation("self.name != 'forbidden'", "the name is forbidden"),
		kube.Rules(&port,
			kube.Field(&port.Number).Minimum(1).Maximum(65535),
			kube.Field(&port.Name).Enum("http", "https", "metrics"),
		).Description("A port."),
		kube.Rules(&mode, kube.Field(&mode).Enum("fast", "safe").Description("How it runs.")),
		kube.Rules(&limits).Validation("self.min <= self.max", "min must not exceed max"),
		kube.Rules(&template, kube.Field(&template.Extra).PreserveUnknownFields()),
	}
)

func TestRules_put_each_constraint_on_its_fields_schema(t *testing.T) {
	require.Equal(t, `description: A server.
properties:
  config:
    type: object
    x-kubernetes-embedded-resource: true
    x-kubernetes-preserve-unknown-fields: true
  labels:
    additionalProperties:
      type: string
    maxProperties: 4
    minProperties: 1
    type: object
    x-kubernetes-map-type: atomic
  main:
    description: A port.
    properties:
      name:
        enum:
        - http
        - https
        - metrics
        type: string
      number:
        format: int32
        maximum: 65535
        minimum: 1
        type: integer
    required:
    - name
    - number
    type: object
  max:
    format: int64
    type: integer
  min:
    format: int64
    minimum: 0
    type: integer
  mode:
    default: safe
    description: How it runs.
    enum:
    - fast
    - safe
    type: string
  name:
    maxLength: 63
    minLength: 1
    pattern: ^[a-z]+$
    type: string
  ports:
    description: The ports it listens on.
    items:
      description: A port.
      properties:
        name:
          enum:
          - http
          - https
          - metrics
          type: string
        number:
          format: int32
          maximum: 65535
          minimum: 1
          type: integer
      required:
      - name
      - number
      type: object
    nullable: true
    type: array
    x-kubernetes-list-map-keys:
    - name
    x-kubernetes-list-type: map
  ratio:
    exclusiveMaximum: true
    exclusiveMinimum: true
    maximum: 1
    minimum: 0
    multipleOf: 0.125
    type: number
  replicas:
    format: int32
    maximum: 10
    minimum: 0
    nullable: true
    type: integer
  retries:
    default: "3"
    type: string
  since:
    format: date-time
    type: string
  tags:
    items:
      type: string
    maxItems: 8
    minItems: 1
    type: array
    x-kubernetes-list-type: set
    x-kubernetes-validations:
    - message: tags are short
      rule: self.all(t, t.size() < 16)
  template:
    properties:
      extra:
        additionalProperties:
          type: string
        type: object
        x-kubernetes-preserve-unknown-fields: true
      port:
        description: A port.
        properties:
          name:
            enum:
            - http
            - https
            - metrics
            type: string
          number:
            format: int32
            maximum: 65535
            minimum: 1
            type: integer
        required:
        - name
        - number
        type: object
    required:
    - port
    type: object
required:
- labels
- max
- min
- name
- ports
- ratio
- template
type: object
x-kubernetes-validations:
- message: min must not exceed max
  rule: self.min <= self.max
- message: the name is forbidden
  rule: self.name != 'forbidden'
`, specYAML[Server](t, serverRules...))
}

// Version encodes itself, so only a Schema gives it a schema.
type Version struct{ Major, Minor int }

func (v Version) MarshalText() ([]byte, error) {
	return []byte(strings.Repeat("v", 1) + string(rune('0'+v.Major)) + "." + string(rune('0'+v.Minor))), nil
}

type Release struct {
	Version  Version   `json:"version"`
	Previous []Version `json:"previous,omitempty"`
}

var version Version

func TestSchema_gives_a_type_that_encodes_itself_its_schema(t *testing.T) {
	rules := []kube.TypeRules{
		kube.Schema(&version, apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: `^v[0-9]+\.[0-9]+$`}).
			Description("A version.").
			Validation("self != 'v0.0'", "v0.0 was never released"),
	}
	require.Equal(t, `properties:
  previous:
    items:
      description: A version.
      pattern: ^v[0-9]+\.[0-9]+$
      type: string
      x-kubernetes-validations:
      - message: v0.0 was never released
        rule: self != 'v0.0'
    type: array
  version:
    description: A version.
    pattern: ^v[0-9]+\.[0-9]+$
    type: string
    x-kubernetes-validations:
    - message: v0.0 was never released
      rule: self != 'v0.0'
required:
- version
type: object
`, specYAML[Release](t, rules...))

	t.Run("with a nil value, which only names the type", func(t *testing.T) {
		_, err := thing[Release](kube.Schema((*Version)(nil), apiextensionsv1.JSONSchemaProps{Type: "string"})).CRD()
		require.NoError(t, err)
	})
}

func TestFieldOf_chains_without_sharing(t *testing.T) {
	base := kube.Field(&spec.Size).Minimum(1)
	low := base.Maximum(2)
	high := base.Maximum(3)
	for want, f := range map[string]kube.FieldOf[int32]{"2": low, "3": high} {
		crd, err := thing[MemcachedSpec](kube.Rules(&spec, f)).CRD()
		require.NoError(t, err)
		size := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"]
		require.EqualValues(t, 1, *size.Minimum)
		got, err := json.Marshal(size.Maximum)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
}

var _ = yaml.Marshal
