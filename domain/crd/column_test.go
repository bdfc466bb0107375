package crd

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type (
	columnSpec struct {
		Size int32 `json:"size"`
	}
	columnStatus struct {
		Ready      int32              `json:"readyReplicas,omitempty"`
		Conditions []metav1.Condition `json:"conditions,omitempty"`
		Nested     struct {
			Conditions []metav1.Condition `json:"conds"`
		} `json:"nested"`
		Hidden []metav1.Condition `json:"-"`
	}
)

// columnDefinition is a Definition of columnSpec and columnStatus with
// the given columns, their Rules pointing into spec and status.
func columnDefinition(spec *columnSpec, status *columnStatus, columns ...PrinterColumn) Definition {
	return Definition{
		Group: "cache.example.com", Version: "v1", Kind: "Cache", Plural: "caches",
		Scope: apiextensionsv1.NamespaceScoped,
		Spec:  reflect.TypeFor[columnSpec](), Status: reflect.TypeFor[columnStatus](),
		Rules:   []TypeRules{Rules(spec), Rules(status)},
		Columns: columns,
	}
}

func TestConditionColumn_filters_the_conditions_by_type(t *testing.T) {
	var (
		spec   columnSpec
		status columnStatus
	)
	for _, tc := range []struct {
		name   string
		column PrinterColumn
		want   apiextensionsv1.CustomResourceColumnDefinition
	}{
		{"a status condition", ConditionColumn("Available", &status.Conditions, "Available"),
			apiextensionsv1.CustomResourceColumnDefinition{Name: "Available", Type: "string", JSONPath: `.status.conditions[?(@.type=="Available")].status`}},
		{"a nested, renamed field", ConditionColumn("Ready", &status.Nested.Conditions, "Ready").Description("Ready?").Priority(1),
			apiextensionsv1.CustomResourceColumnDefinition{Name: "Ready", Type: "string", Description: "Ready?", Priority: 1, JSONPath: `.status.nested.conds[?(@.type=="Ready")].status`}},
		{"a prefixed type", ConditionColumn("Synced", &status.Conditions, "example.com/Synced"),
			apiextensionsv1.CustomResourceColumnDefinition{Name: "Synced", Type: "string", JSONPath: `.status.conditions[?(@.type=="example.com/Synced")].status`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := columnDefinition(&spec, &status, tc.column).CRD()
			noError(t, err)
			equal(t, []apiextensionsv1.CustomResourceColumnDefinition{tc.want, ageColumn},
				c.Spec.Versions[0].AdditionalPrinterColumns, "columns")
		})
	}
}

func TestConditionColumn_mistakes_are_reported_with_every_other(t *testing.T) {
	var (
		spec   columnSpec
		status columnStatus
		other  []metav1.Condition
	)
	_, err := columnDefinition(&spec, &status,
		Column("Size", &spec.Size),
		ConditionColumn("Empty", &status.Conditions, ""),
		ConditionColumn("Quoted", &status.Conditions, `Avail"able`),
		ConditionColumn("Elsewhere", &other, "Available"),
		ConditionColumn("Hidden", &status.Hidden, "Available"),
		ConditionColumn("Nil", nil, "Available"),
		ConditionColumn("Size", &status.Conditions, "Available"),
	).CRD()
	errorContains(t, err,
		`Columns[1] ("Empty"): has no condition type`,
		`Columns[2] ("Quoted"): has the condition type "Avail\"able": `,
		`Columns[3] ("Elsewhere"): points into neither`,
		`Columns[4] ("Hidden"): names `,
		`Columns[5] ("Nil"): has a nil pointer`,
		`Columns[6] ("Size"): has the name of Columns[0]`,
	)
}
