package crd

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

type (
	hubSpec struct {
		Replicas int32 `json:"replicas"`
	}
	spokeSpec struct {
		Size int32 `json:"size"`
	}
	versionStatus struct {
		Ready int32 `json:"ready,omitempty"`
	}
	// sameSpec has hubSpec's schema under another Go name.
	sameSpec struct {
		Replicas int32 `json:"replicas"`
	}
)

// versioned is a Definition whose storage version v2 has hubSpec, with the
// given other versions and conversion webhook.
func versioned(webhook *apiextensionsv1.WebhookClientConfig, versions ...VersionDefinition) Definition {
	return Definition{
		Group: "cache.example.com", Version: "v2", Kind: "Cache", Plural: "caches",
		Scope: apiextensionsv1.NamespaceScoped,
		Spec:  reflect.TypeFor[hubSpec](), Status: reflect.TypeFor[versionStatus](),
		Versions: versions,
		Webhook:  webhook,
	}
}

func spoke(name string) VersionDefinition {
	return VersionDefinition{Name: name, Spec: reflect.TypeFor[spokeSpec](), Status: reflect.TypeFor[versionStatus]()}
}

func unconverted(name string) VersionDefinition {
	return VersionDefinition{Name: name, Spec: reflect.TypeFor[sameSpec](), Status: reflect.TypeFor[versionStatus](), Unconverted: true}
}

var hook = &apiextensionsv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:9443/convert/cache.example.com/caches")}

func TestCRD_writes_the_storage_version_then_the_others_in_order(t *testing.T) {
	var spec spokeSpec
	v1 := spoke("v1")
	v1.Rules = []TypeRules{Rules(&spec, Field(&spec.Size).Minimum(1))}
	v1.Columns = []PrinterColumn{Column("Size", &spec.Size)}
	v1.Deprecated, v1.DeprecationWarning = true, "v1 is going away"
	alpha := unconverted("v1alpha1")
	alpha.Unserved = true
	alpha.Deprecated = true

	def, err := versioned(hook, v1, alpha).CRD()
	noError(t, err)
	vs := def.Spec.Versions
	equal(t, 3, len(vs), "versions")
	type summary struct {
		Name                        string
		Served, Storage, Deprecated bool
		Warning                     string
		Columns                     int
		SizeProperty, ReplicasProp  bool
		Status                      bool
	}
	sum := func(v apiextensionsv1.CustomResourceDefinitionVersion) summary {
		spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
		s := summary{Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated, Columns: len(v.AdditionalPrinterColumns), Status: v.Subresources.Status != nil}
		if v.DeprecationWarning != nil {
			s.Warning = *v.DeprecationWarning
		}
		_, s.SizeProperty = spec.Properties["size"]
		_, s.ReplicasProp = spec.Properties["replicas"]
		return s
	}
	equal(t, summary{Name: "v2", Served: true, Storage: true, ReplicasProp: true, Status: true}, sum(vs[0]), "the storage version")
	equal(t, summary{Name: "v1", Served: true, Deprecated: true, Warning: "v1 is going away", Columns: 2, SizeProperty: true, Status: true}, sum(vs[1]), "v1")
	equal(t, summary{Name: "v1alpha1", Deprecated: true, ReplicasProp: true, Status: true}, sum(vs[2]), "v1alpha1")
	equal(t, ptr(int64(1)), ptr(int64(*vs[1].Schema.OpenAPIV3Schema.Properties["spec"].Properties["size"].Minimum)), "v1's own rules")
	equal(t, &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: hook, ConversionReviewVersions: []string{"v1"}},
	}, def.Spec.Conversion, "the conversion")
}

func TestCRD_converts_with_None_when_every_version_is_Unconverted(t *testing.T) {
	def, err := versioned(nil, unconverted("v1"), unconverted("v1beta1")).CRD()
	noError(t, err)
	equal(t, &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}, def.Spec.Conversion, "the conversion")
	equal(t, 3, len(def.Spec.Versions), "versions")
}

func TestCRD_of_one_version_has_no_conversion(t *testing.T) {
	def, err := versioned(nil).CRD()
	noError(t, err)
	if def.Spec.Conversion != nil {
		t.Fatalf("conversion %#v, want none", def.Spec.Conversion)
	}
}

func TestCRD_reports_every_mistake_in_the_versions(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  Definition
		want []string
	}{
		{"a version with no name", versioned(hook, spoke("")), []string{`Versions[0] (""): the version's name is missing`}},
		{"a malformed name", versioned(hook, spoke("V_1")), []string{`Versions[0] ("V_1"): the version's name "V_1"`}},
		{"the storage version's name", versioned(hook, spoke("v2")), []string{`Versions[0] ("v2"): has the name of the storage version`}},
		{"two versions with one name", versioned(hook, spoke("v1"), spoke("v1")), []string{`Versions[1] ("v1"): has the name of Versions[0]`}},
		{"no types", versioned(hook, VersionDefinition{Name: "v1"}), []string{`Versions[0] ("v1"): the Spec and Status types are missing`}},
		{"an Unconverted whose schema differs", versioned(nil, VersionDefinition{Name: "v1", Spec: reflect.TypeFor[spokeSpec](), Status: reflect.TypeFor[versionStatus](), Unconverted: true}),
			[]string{`Versions[0] ("v1"): is Unconverted, but its schema (of crd.spokeSpec and crd.versionStatus) differs from the storage version's (of crd.hubSpec and crd.versionStatus)`}},
		{"a webhook missing", versioned(nil, spoke("v1")), []string{"the conversion webhook is missing"}},
		{"a webhook no version needs", versioned(hook, unconverted("v1")), []string{"the conversion webhook is set, but no version converts through one"}},
		{"a webhook with one version", versioned(hook), []string{"the conversion webhook is set, but no version converts through one"}},
		{"a warning without Deprecated", versioned(hook, VersionDefinition{Name: "v1", Spec: reflect.TypeFor[spokeSpec](), Status: reflect.TypeFor[versionStatus](), DeprecationWarning: "gone"}),
			[]string{`Versions[0] ("v1"): the DeprecationWarning "gone" is set, but the version isn't Deprecated`}},
		{"the storage version's warning without Deprecated", func() Definition { d := versioned(nil); d.DeprecationWarning = "gone"; return d }(),
			[]string{`the DeprecationWarning "gone" is set, but the version isn't Deprecated`}},
		{"a version's rules", func() Definition {
			var other hubSpec
			v := spoke("v1")
			v.Rules = []TypeRules{Rules(&other)}
			return versioned(hook, v)
		}(), []string{`Versions[0] ("v1"): `, "crd.hubSpec"}},
		{"all at once", versioned(nil, spoke("v1"), spoke("v1"), VersionDefinition{Name: "v3"}),
			[]string{`Versions[1] ("v1"): has the name of Versions[0]`, `Versions[2] ("v3"): the Spec and Status types are missing`, "the conversion webhook is missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.def.CRD()
			errorContains(t, err, tc.want...)
		})
	}
}

func TestCRD_takes_an_Unserved_storage_version(t *testing.T) {
	d := versioned(nil, unconverted("v1"))
	d.Unserved = true
	def, err := d.CRD()
	noError(t, err)
	equal(t, false, def.Spec.Versions[0].Served, "the storage version served")
	equal(t, true, def.Spec.Versions[0].Storage, "the storage version stored")
}
