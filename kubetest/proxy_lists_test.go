package kubetest_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest"
)

func TestLists(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		lists          bool
	}{
		{"GET", "/apis/apps/v1/namespaces/ns/deployments", true},
		{"GET", "/api/v1/configmaps?limit=500", true},
		{"GET", "/apis/example.com/v1/widgets?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", true},
		{"GET", "/apis/example.com/v1/widgets?watch=true&resourceVersion=42", false},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/controller", false},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/web", false},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", false},
		{"GET", "/apis", false},
		{"GET", "/api/v1", false},
		{"GET", "/readyz", false},
	} {
		require.Equal(t, tc.lists, kubetest.Lists(httptest.NewRequest(tc.method, tc.target, nil)), "%s %s", tc.method, tc.target)
	}
}
