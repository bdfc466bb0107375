package kube

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestKind_mistakes_accepts_a_kind_of_Kubernetes_own(t *testing.T) {
	namespaces := Kind[corev1.Namespace]{
		GVR:   corev1.SchemeGroupVersion.WithResource("namespaces"),
		Kind:  "Namespace",
		Scope: Cluster,
	}
	require.Empty(t, namespaces.mistakes())
}

func TestKind_mistakes_names_every_mistake(t *testing.T) {
	err := errors.Join(Kind[corev1.NamespaceSpec]{GVR: schema.GroupVersionResource{Group: "apps"}, Scope: "Nowhere"}.mistakes()...)
	require.EqualError(t, err, "the GVR has no Version\n"+
		"the GVR has no Resource\n"+
		"the Kind is missing\n"+
		`the Scope "Nowhere" is neither Namespaced nor Cluster`+"\n"+
		"*v1.NamespaceSpec is no metav1.Object, so its objects have no metadata to reconcile by")
}
