package crd

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type (
	scaleSpec struct {
		Replicas int32        `json:"replicas"`
		Big      int64        `json:"big"`
		Pointer  *int32       `json:"pointer,omitempty"`
		Optional int32        `json:"optional,omitempty"`
		Nullable *int64       `json:"nullable"`
		Quoted   int32        `json:"quoted,string"`
		Count    scaleCount   `json:"count"`
		Dotted   int32        `json:"a.b"`
		Dashed   int32        `json:"dashed-replicas"`
		Nested   scaleNested  `json:"nested"`
		Loose    *scaleNested `json:"loose,omitempty"`
		Selector string       `json:"selector"`
		Hidden   int32        `json:"-"`
	}
	scaleNested struct {
		Replicas int32 `json:"replicas"`
	}
	scaleStatus struct {
		Replicas int32  `json:"replicas,omitempty"`
		Selector string `json:"selector,omitempty"`
		Maybe    *int32 `json:"maybe"`
		Labels   string `json:"labels,omitempty"`
	}
	// scaleCount encodes as a number, but a Schema says it's a string.
	scaleCount int32
)

// scaleDefinition is a Definition of scaleSpec and scaleStatus with the
// scale subresource s and the Rules rules, those of spec and status
// first.
func scaleDefinition(spec *scaleSpec, status *scaleStatus, s ScaleSubresource, rules ...TypeRules) Definition {
	return Definition{
		Group: "scale.example.com", Version: "v1", Kind: "Pool", Plural: "pools",
		Scope: apiextensionsv1.NamespaceScoped,
		Spec:  reflect.TypeFor[scaleSpec](), Status: reflect.TypeFor[scaleStatus](),
		Rules: append([]TypeRules{Rules(spec), Rules(status)}, rules...),
		Scale: s,
	}
}

func TestScale_paths_are_the_fields_JSON_names_in_dot_notation(t *testing.T) {
	var (
		spec   scaleSpec
		status scaleStatus
	)
	selector := func(p string) *string { return &p }
	for _, tc := range []struct {
		name  string
		scale ScaleSubresource
		rules []TypeRules
		want  *apiextensionsv1.CustomResourceSubresourceScale
	}{
		{"none", ScaleSubresource{}, nil, nil},
		{"int32 replicas, no selector", Scale(&spec.Replicas, &status.Replicas), nil,
			&apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"}},
		{"a selector in the status", Scale(&spec.Replicas, &status.Replicas).Selector(&status.Selector), nil,
			&apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: selector(".status.selector")}},
		{"a selector in the spec", Scale(&spec.Replicas, &status.Replicas).Selector(&spec.Selector), nil,
			&apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: selector(".spec.selector")}},
		{"int64 replicas", Scale(&spec.Big, &status.Replicas), nil,
			&apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.big", StatusReplicasPath: ".status.replicas"}},
		{"a pointer with a Default", Scale(&spec.Pointer, &status.Replicas), []TypeRules{Rules(&spec, Field(&spec.Pointer).Default(new(int32(1))))},
			&apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.pointer", StatusReplicasPath: ".status.replicas"}},
		{"a name with a dash", Scale(&spec.Dashed, &status.Replicas), nil,
			&apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.dashed-replicas", StatusReplicasPath: ".status.replicas"}},
		{"a nested struct's field", Scale(&spec.Nested.Replicas, &status.Replicas), nil,
			&apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.nested.replicas", StatusReplicasPath: ".status.replicas"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := scaleDefinition(&spec, &status, tc.scale)
			if len(tc.rules) > 0 {
				d.Rules = append(tc.rules, Rules(&status))
			}
			c, err := d.CRD()
			noError(t, err)
			sub := c.Spec.Versions[0].Subresources
			equal(t, &apiextensionsv1.CustomResourceSubresourceStatus{}, sub.Status, "the status subresource, kept")
			equal(t, tc.want, sub.Scale, "the scale subresource")
		})
	}
}

func TestScale_mistakes_are_reported_with_every_other(t *testing.T) {
	var (
		spec   scaleSpec
		status scaleStatus
		other  int32
		// elsewhere is a selector in no Rules' value; loose has a Loose
		// to point into.
		elsewhere string
		loose     = scaleSpec{Loose: &scaleNested{}}
	)
	d := scaleDefinition(&spec, &status, Scale[int32, int32](nil, nil).Selector(nil))
	d.Columns = []PrinterColumn{Column("", &spec.Replicas)}
	d.Versions = []VersionDefinition{
		{Name: "v2", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&spec), Rules(&status)}, Scale: Scale(&status.Replicas, &spec.Replicas).Selector(&elsewhere)},
		{Name: "v3", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&spec), Rules(&status, Field(&status.Labels).Nullable())}, Scale: Scale(&spec.Optional, &status.Maybe).Selector(&status.Labels)},
		{Name: "v4", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&spec), Rules(&status)}, Scale: Scale(&spec.Quoted, &other)},
		{Name: "v5", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&spec), Rules(&status)}, Scale: Scale(&spec.Dotted, &status.Replicas)},
		{Name: "v6", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&loose), Rules(&status)}, Scale: Scale(&loose.Loose.Replicas, &status.Replicas)},
		{Name: "v7", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&spec), Rules(&status), Schema[scaleCount](nil, apiextensionsv1.JSONSchemaProps{Type: "string"})}, Scale: Scale(&spec.Count, &status.Replicas)},
		{Name: "v8", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&spec), Rules(&status)}, Scale: Scale(&spec.Nullable, &status.Replicas)},
		{Name: "v9", Spec: d.Spec, Status: d.Status, Rules: []TypeRules{Rules(&spec), Rules(&status)}, Scale: Scale(&spec.Hidden, &status.Replicas)},
	}
	_, err := d.CRD()
	errorContains(t, err,
		`Columns[0] (""): has no name`,
		`Scale.SpecReplicas: has a nil pointer, which names no field`,
		`Scale.StatusReplicas: has a nil pointer, which names no field`,
		`Scale.Selector: has a nil pointer, which names no field`,
		`Versions[0] ("v2"): Scale.SpecReplicas: is .status.replicas, a field of the status: the replicas that kubectl scale and an autoscaler set are a field of the spec`,
		`Versions[0] ("v2"): Scale.StatusReplicas: is .spec.replicas, a field of the spec: the replicas that the controller reports are a field of the status`,
		`Versions[0] ("v2"): Scale.Selector: points into neither the value given to the Rules of crd.scaleSpec nor that of crd.scaleStatus`,
		`Versions[1] ("v3"): Scale.SpecReplicas: is .spec.optional, which may be missing, as it is optional and has no Default: the API server fails every GET of the scale of an object without it, as an autoscaler makes; make it required, or give it a Default`,
		`Versions[1] ("v3"): Scale.StatusReplicas: is .status.maybe, which may be null: the API server can't read null as an integer; give the field omitempty, or leave out Nullable`,
		`Versions[1] ("v3"): Scale.Selector: is .status.labels, which may be null: the API server can't read null as a string`,
		`Versions[2] ("v4"): Scale.SpecReplicas: is .spec.quoted, a string in the schema: the API server reads it as an integer`,
		`Versions[2] ("v4"): Scale.StatusReplicas: points into neither`,
		`Versions[3] ("v5"): Scale.SpecReplicas: is .spec['a.b'], whose name "a.b" has a dot: the API server splits its path to the field at each dot`,
		`Versions[4] ("v6"): Scale.SpecReplicas: is .spec.loose.replicas, which may be missing, as .spec.loose is optional and has no Default`,
		`Versions[5] ("v7"): Scale.SpecReplicas: is .spec.count, a string in the schema: the API server reads it as an integer`,
		`Versions[6] ("v8"): Scale.SpecReplicas: is .spec.nullable, which may be null: the API server can't read null as an integer; make the field no pointer, or give it omitempty and a Default, or leave out Nullable`,
		`Versions[7] ("v9"): Scale.SpecReplicas: names scaleSpec.Hidden, which encoding/json doesn't encode`,
	)
}
