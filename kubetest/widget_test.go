package kubetest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/kubetest"
)

// Widget is the custom resource the tests install: a namespaced kind with a
// spec validated by its schema and by a CEL rule, and a status subresource.
var widgetGVR = schema.GroupVersionResource{Group: "kubetest.loam.dev", Version: "v1", Resource: "widgets"}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.kubetest.loam.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kubetest.loam.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:     "object",
					Required: []string{"spec"},
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type:     "object",
							Required: []string{"size"},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size":  {Type: "integer", Minimum: ptr.To(1.0), Maximum: ptr.To(10.0)},
								"color": {Type: "string"},
							},
							XValidations: apiextensionsv1.ValidationRules{{
								Rule:    "!has(self.color) || self.color != 'red' || self.size <= 5",
								Message: "a red widget has at most 5 parts",
							}},
						},
						"status": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"ready":              {Type: "boolean"},
								"observedGeneration": {Type: "integer", Format: "int64"},
							},
						},
					},
				}},
			}},
		},
	}
}

func widget(namespace, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubetest.loam.dev/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
		"spec":       spec,
	}}
}

// widgets installs the Widget CRD on c (again, which is harmless) and
// returns a client for Widgets in namespace.
func widgets(t *testing.T, c *kubetest.Cluster, namespace string) dynamic.ResourceInterface {
	t.Helper()
	require.NoError(t, c.InstallCRDs(t.Context(), widgetCRD()))
	client, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	return client.Resource(widgetGVR).Namespace(namespace)
}

func createWidget(ctx context.Context, t *testing.T, client dynamic.ResourceInterface, w *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	created, err := client.Create(ctx, w, metav1.CreateOptions{})
	require.NoError(t, err)
	return created
}

// Gadget is a kind with no schema to speak of, installed after a cluster
// started.
var gadgetGVR = schema.GroupVersionResource{Group: "kubetest.loam.dev", Version: "v1", Resource: "gadgets"}

func gadgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.kubetest.loam.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kubetest.loam.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

func gadget(namespace, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubetest.loam.dev/v1",
		"kind":       "Gadget",
		"metadata":   map[string]any{"namespace": namespace, "name": name},
	}}
}
