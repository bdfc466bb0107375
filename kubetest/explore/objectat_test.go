package explore

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestObjectAt(t *testing.T) {
	for _, tc := range []struct {
		path string
		want object
		ok   bool
	}{
		{"/api/v1/namespaces/ns/configmaps/cm", object{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ns", "cm"}, true},
		{"/api/v1/namespaces/ns/configmaps", object{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ns", ""}, true},
		{"/apis/apps/v1/namespaces/ns/deployments/d/status", object{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "ns", "d"}, true},
		{"/apis/coordination.k8s.io/v1/namespaces/ns/leases", object{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, "ns", ""}, true},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles/r", object{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "", "r"}, true},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", object{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "", ""}, true},
		{"/api/v1/namespaces/ns", object{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "ns"}, true},
		{"/api/v1/namespaces/ns/status", object{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "ns"}, true},
		{"/healthz", object{}, false},
		{"/apis/apps", object{}, false},
		{"/api/v1/namespaces/ns/pods/p/log/extra", object{}, false},
	} {
		got, ok := objectAt(tc.path)
		require.Equal(t, tc.ok, ok, tc.path)
		require.Equal(t, tc.want, got, tc.path)
	}
}
