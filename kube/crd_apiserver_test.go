package kube_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
)

func validateCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	var internal apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil))
	// As the API server's create strategy does before it validates.
	internal.Status = apiextensions.CustomResourceDefinitionStatus{StoredVersions: []string{crd.Spec.Versions[0].Name}}
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal)
	require.Empty(t, errs.ToAggregate())
}

func TestMemcachedCRD_is_valid_to_the_API_server(t *testing.T) {
	crd, err := Memcached.CRD()
	require.NoError(t, err)
	validateCRD(t, crd)
}
