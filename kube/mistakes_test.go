package kube_test

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/loam-dev/loam/kube"
)

// Broken holds every type a schema can't express.
type Broken struct {
	Callback func()            `json:"callback"`
	Events   chan int          `json:"events"`
	Anything any               `json:"anything"`
	ByNumber map[int]string    `json:"byNumber"`
	Head     *Node             `json:"head,omitempty"`
	Stamp    Stamp             `json:"stamp"`
	Size     int32             `json:"size"`
	Name     string            `json:"name"`
	Main     Port              `json:"main"`
	Wave     complex128        `json:"wave"`
	Tags     []string          `json:"tags"`
	secret   string            // a field encoding/json doesn't encode
	Labels   map[string]string `json:"labels"`
	Ports    []Port            `json:"ports"`
	Ratio    float64           `json:"ratio"`
}

// Node contains itself.
type Node struct {
	Next *Node `json:"next,omitempty"`
}

// Stamp encodes itself and has no Schema.
type Stamp struct{ Unix int64 }

func (s Stamp) MarshalJSON() ([]byte, error) { return []byte("0"), nil }

type Unrelated struct{ X int }

var (
	broken    Broken
	unrelated Unrelated
)

func TestResource_CRD_names_every_mistake_at_once(t *testing.T) {
	r := kube.Resource[Broken, NoStatus]{
		Version: "v1",
		Kind:    "Broken",
		Scope:   "Everywhere",
		Rules: []kube.TypeRules{
			kube.Rules(&broken,
				kube.Field(&broken.Size).Pattern(regexp.MustCompile(`^[0-9]+$`)),
				kube.Field(&broken.Name).Minimum("a").MinItems(1),
				kube.Field(&broken.Tags).MaxLength(3).MinProperties(1),
				kube.Field(&broken.Labels).MinItems(1),
				kube.Field(&broken.Main.Number).Minimum(1),
				kube.Field(&unrelated.X).Minimum(1),
				kube.Field(&broken.secret).MinLength(1),
				kube.Field(&broken.Ports).ListMap("number", "protocol"),
				kube.Field(&broken.Ratio).ExclusiveMinimum(),
				kube.Field(&broken.Size).Optional().Required(),
			),
			kube.Rules(&broken),
			kube.Schema(&version, apiextensionsv1.JSONSchemaProps{Type: "string"}),
			kube.Schema(&version, apiextensionsv1.JSONSchemaProps{Type: "string"}),
			kube.Rules(&unrelated),
		},
	}
	_, err := r.CRD()
	require.Error(t, err)
	for _, want := range []string{
		"kube: the CRD of Broken: ",
		"Group is missing",
		"Plural is missing",
		`the Scope "Everywhere" is neither Namespaced nor Cluster`,
		"spec.callback: func() is a function, which encoding/json can't encode",
		"spec.events: chan int is a channel, which encoding/json can't encode",
		"spec.anything: interface {} is an interface",
		"spec.byNumber: map[int]string is a map whose keys aren't strings",
		"spec.head.next: kube_test.Node contains itself, which a schema without $ref can't express",
		"spec.stamp: kube_test.Stamp encodes itself with MarshalJSON and has no Schema",
		"spec.wave: complex128 is a complex128, which encoding/json can't encode",
		"spec.size: Broken.Size: Pattern doesn't fit an integer",
		"spec.size: Broken.Size is both Optional and Required",
		"spec.name: Broken.Name: Minimum doesn't fit a string",
		"spec.name: Broken.Name: MinItems doesn't fit a string",
		"spec.tags: Broken.Tags: MaxLength doesn't fit an array",
		"spec.tags: Broken.Tags: MinProperties doesn't fit an array",
		"spec.labels: Broken.Labels: MinItems doesn't fit an object",
		"spec.ratio: ExclusiveMinimum without a Minimum",
		`spec.ports: ListMap key "protocol" names no field of the items`,
		"Rules[0] (kube_test.Broken): Field 4 names Broken.Main.Number, a field of the nested kube_test.Port: it belongs in kube_test.Port's Rules",
		"Rules[0] (kube_test.Broken): Field 5, a *int, names no field of the value given to Rules",
		"Rules[0] (kube_test.Broken): Field 6 names Broken.secret, which encoding/json doesn't encode",
		"Rules[1] (kube_test.Broken): a second Rules for the type, which Rules[0] constrains already",
		"Rules[3] (kube_test.Version): a second Schema for the type, which Rules[2] gives a Schema already",
		"Rules[2] (kube_test.Version): kube_test.Version appears nowhere in spec or status, so these rules constrain nothing",
		"Rules[4] (kube_test.Unrelated): kube_test.Unrelated appears nowhere in spec or status",
	} {
		require.ErrorContains(t, err, want)
	}
	require.Len(t, strings.Split(err.Error(), "\n"), 26, "one line for each mistake")
}

// Shape is a struct for the single mistakes below.
type Shape struct {
	Sides  int    `json:"sides"`
	Label  string `json:"label"`
	Corner Point  `json:"corner"`
	Tagged `json:"tagged"`
}

type Point struct {
	X int `json:"x"`
}

var (
	shape Shape
	point Point
)

func TestResource_CRD_reports_each_mistake_with_its_place(t *testing.T) {
	named := func(mutate func(*kube.Resource[Shape, NoStatus])) kube.Resource[Shape, NoStatus] {
		r := thing[Shape]()
		mutate(&r)
		return r
	}
	for _, c := range []struct {
		name string
		r    interface {
			CRD() (*apiextensionsv1.CustomResourceDefinition, error)
		}
		want string
	}{
		{"a missing Version", named(func(r *kube.Resource[Shape, NoStatus]) { r.Version = "" }), "Version is missing"},
		{"a missing Kind", named(func(r *kube.Resource[Shape, NoStatus]) { r.Kind = "" }),
			"kube: the CRD of kube.Resource[github.com/loam-dev/loam/kube_test.Shape,github.com/loam-dev/loam/kube_test.NoStatus]: Kind is missing"},
		{"a Group without a dot", named(func(r *kube.Resource[Shape, NoStatus]) { r.Group = "cache" }),
			`Group "cache": must have a dot, as a domain such as example.com does`},
		{"a Plural in upper case", named(func(r *kube.Resource[Shape, NoStatus]) { r.Plural = "Things" }), `Plural "Things": a DNS-1035 label must consist of lower case`},
		{"a Kind that is no name", named(func(r *kube.Resource[Shape, NoStatus]) { r.Kind = "Thing One" }), `Kind "Thing One": a DNS-1035 label`},
		{"a bad short name", named(func(r *kube.Resource[Shape, NoStatus]) { r.ShortNames = []string{"th", "T_H"} }), `ShortNames[1] "T_H": a DNS-1035 label`},
		{"a bad category", named(func(r *kube.Resource[Shape, NoStatus]) { r.Categories = []string{"all", ""} }), `Categories[1] "": a DNS-1035 label`},
		{"no Scope", named(func(r *kube.Resource[Shape, NoStatus]) { r.Scope = "" }), `the Scope "" is neither Namespaced nor Cluster`},
		{"a nil Field", thing[Shape](kube.Rules(&shape, kube.Field[int](nil).Minimum(1))),
			"Rules[0] (kube_test.Shape): Field 0 is a nil pointer, which names no field"},
		{"a nil FieldRules", thing[Shape](kube.Rules(&shape, nil)),
			"Rules[0] (kube_test.Shape): Field 0 is a nil pointer, which names no field"},
		{"Fields of a nil value", thing[Shape](kube.Rules((*Shape)(nil), kube.Field(&shape.Sides))),
			"Rules[0] (kube_test.Shape): Field 0 points into a nil *kube_test.Shape, so it names none of its fields"},
		{"a zero TypeRules", thing[Shape](kube.TypeRules{}), "Rules[0]: has no pointer to a value of the type it constrains"},
		{"Rules for a type with no name", thing[Shape](kube.Rules(&[]string{})),
			"Rules[0] ([]string): []string is a type with no name: Rules belong to a type wherever it appears, so give it a name of its own"},
		{"Rules and a Schema for one type", thing[Shape](kube.Rules(&point), kube.Schema(&point, apiextensionsv1.JSONSchemaProps{Type: "object"})),
			"Rules[1] (kube_test.Point): both Rules and a Schema for the type, with Rules[0]: a Schema is the type's whole schema"},
		{"a Schema with a $ref", thing[Shape](kube.Schema(&point, apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"x": {Ref: new(string)}},
		})), "Rules[0] (kube_test.Point): the Schema has a $ref: a CRD's schema inlines every subschema"},
		{"a field of a Schema's type", thing[Shape](kube.Schema(&point, apiextensionsv1.JSONSchemaProps{Type: "object"}), kube.Rules(&shape, kube.Field(&shape.Corner.X))),
			"Rules[1] (kube_test.Shape): Field 0 names Shape.Corner.X, a field of the nested kube_test.Point: it belongs in kube_test.Point's Rules"},
		{"a field of a struct encoding/json nests", thing[Shape](kube.Rules(&shape, kube.Field(&shape.Owner))),
			"Rules[0] (kube_test.Shape): Field 0 names Shape.Tagged.Owner, a field of kube_test.Tagged, which encoding/json nests: it belongs in kube_test.Tagged's Rules"},
		{"Optional on a type", thing[Shape](kube.Rules(&shape, kube.Field(&shape).Optional())),
			"Rules[0] (kube_test.Shape): Field 0: Optional belongs to a field, not to the type kube_test.Shape"},
		{"a constraint on a type that doesn't fit it", thing[Shape](kube.Rules(&shape, kube.Field(&shape).MinLength(1))),
			"spec: Rules[0] (kube_test.Shape): MinLength doesn't fit an object"},
		{"an empty Enum", thing[Shape](kube.Rules(&shape, kube.Field(&shape.Sides).Enum())), "spec.sides: Shape.Sides: Enum needs at least one value"},
		{"a nil Pattern", thing[Shape](kube.Rules(&shape, kube.Field(&shape.Label).Pattern(nil))), "spec.label: Shape.Label: Pattern(nil) has no regular expression"},
		{"a negative length", thing[Shape](kube.Rules(&shape, kube.Field(&shape.Label).MaxLength(-1))), "spec.label: Shape.Label: MaxLength(-1) is negative"},
		{"an empty Format", thing[Shape](kube.Rules(&shape, kube.Field(&shape.Label).Format(""))), `spec.label: Shape.Label: Format("") names no format`},
		{"a MultipleOf zero", thing[Shape](kube.Rules(&shape, kube.Field(&shape.Sides).MultipleOf(0))), "spec.sides: Shape.Sides: MultipleOf(0) is not positive"},
		{"a ListType that is no list type", thing[Lists](kube.Rules(&lists, kube.Field(&lists.Tags).ListType("map"))),
			`ListType("map") has no keys: use ListMap`},
		{"a MapType that is no map type", thing[Lists](kube.Rules(&lists, kube.Field(&lists.Labels).MapType("merged"))),
			`MapType("merged") is neither atomic nor granular`},
		{"an empty Validation rule", thing[Shape](kube.Rules(&shape).Validation("", "empty")), "spec: Rules[0] (kube_test.Shape): Validation has an empty rule"},
		{"an ExclusiveMaximum without a Maximum", thing[Shape](kube.Rules(&shape, kube.Field(&shape.Sides).ExclusiveMaximum())),
			"spec.sides: ExclusiveMaximum without a Maximum"},
		{"a ListMap of scalars", thing[Lists](kube.Rules(&lists, kube.Field(&lists.Tags).ListMap("name"))),
			"ListMap needs items that are objects, not a string"},
		{"a ListMap key neither required nor defaulted", thing[Lists](kube.Rules(&lists, kube.Field(&lists.Ports).ListMap("name")), kube.Rules(&port, kube.Field(&port.Name).Optional())),
			`ListMap key "name" must be a required field of the items, or have a Default`},
		{"a Minimum whose value is no number", thing[Lists](kube.Rules(&lists, kube.Field(&lists.Replicas).Minimum(nil))), "spec.replicas: Lists.Replicas: Minimum: null is not a number"},
		{"a Default encoding/json can't encode", thing[Lists](kube.Rules(&lists, kube.Field(&lists.Replicas).Default(nil), kube.Field(&lists.Ratio).Default(math.Inf(1)))),
			"spec.ratio: Lists.Ratio: Default: json: unsupported value: +Inf"},
		{"no mistake", thing[Lists](kube.Rules(&lists, kube.Field(&lists.Replicas).Default(nil).Nullable())), ""},
		{"fields that hide each other", thing[Twins](), `spec: Twins.Left.Name and Twins.Right.Name encode as "Name" at the same depth, so encoding/json encodes none of them`},
		{"a column with no name", named(func(r *kube.Resource[Shape, NoStatus]) {
			r.Rules = []kube.TypeRules{kube.Rules(&shape)}
			r.Columns = []kube.PrinterColumn{kube.Column("", &shape.Sides)}
		}), `Columns[0] (""): has no name`},
		{"two columns of one name", named(func(r *kube.Resource[Shape, NoStatus]) {
			r.Rules = []kube.TypeRules{kube.Rules(&shape)}
			r.Columns = []kube.PrinterColumn{kube.Column("Sides", &shape.Sides), kube.Column("Sides", &shape.Label)}
		}), `Columns[1] ("Sides"): has the name of Columns[0]`},
		{"a column of no Rules' value", named(func(r *kube.Resource[Shape, NoStatus]) {
			r.Columns = []kube.PrinterColumn{kube.Column("Sides", &shape.Sides)}
		}), `Columns[0] ("Sides"): points into neither the value given to the Rules of kube_test.Shape nor that of kube_test.NoStatus`},
		{"a column of a nil pointer", named(func(r *kube.Resource[Shape, NoStatus]) {
			r.Columns = []kube.PrinterColumn{kube.Column[int]("Sides", nil)}
		}), `Columns[0] ("Sides"): has a nil pointer, which names no field`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.r.CRD()
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}

// Lists holds lists and maps for the single mistakes above.
type Lists struct {
	Tags     []string          `json:"tags"`
	Labels   map[string]string `json:"labels"`
	Ports    []Port            `json:"ports"`
	Replicas *int32            `json:"replicas"`
	Ratio    float64           `json:"ratio"`
}

var lists Lists

// Twins embeds two structs whose fields share a name at one depth, so
// encoding/json encodes neither.
type Twins struct {
	Left
	Right
}

type Left struct {
	Name string
}

type Right struct {
	Name string
}
