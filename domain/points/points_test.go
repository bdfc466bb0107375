package points_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/points"
)

func TestPoint_names_requests_as_the_API_server_does(t *testing.T) {
	tests := []struct {
		method, url string
		want        string
	}{
		// Every verb of a namespaced resource of the core group.
		{"GET", "/api/v1/namespaces/ns/configmaps/cm", "kube:configmaps:get"},
		{"HEAD", "/api/v1/namespaces/ns/configmaps/cm", "kube:configmaps:get"},
		{"GET", "/api/v1/namespaces/ns/configmaps", "kube:configmaps:list"},
		{"HEAD", "/api/v1/namespaces/ns/configmaps", "kube:configmaps:list"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=true", "kube:configmaps:watch"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=7", "kube:configmaps:watch"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=", "kube:configmaps:watch"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=yes", "kube:configmaps:watch"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=false", "kube:configmaps:list"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=FALSE", "kube:configmaps:list"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=0", "kube:configmaps:list"},
		{"GET", "/api/v1/namespaces/ns/configmaps?watch=0&watch=true", "kube:configmaps:list"},
		{"GET", "/api/v1/namespaces/ns/configmaps/cm?watch=true", "kube:configmaps:get"},
		{"POST", "/api/v1/namespaces/ns/configmaps", "kube:configmaps:create"},
		{"PUT", "/api/v1/namespaces/ns/configmaps/cm", "kube:configmaps:update"},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/cm", "kube:configmaps:patch"},
		{"PATCH", "/api/v1/namespaces/ns/configmaps/cm?fieldManager=loam&force=true", "kube:configmaps:patch"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps/cm", "kube:configmaps:delete"},
		{"DELETE", "/api/v1/namespaces/ns/configmaps", "kube:configmaps:deletecollection"},
		// Across every namespace.
		{"GET", "/api/v1/configmaps", "kube:configmaps:list"},
		{"GET", "/api/v1/pods?watch=true", "kube:pods:watch"},

		// A grouped resource, namespaced.
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d", "kube:deployments.apps:get"},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments", "kube:deployments.apps:list"},
		{"GET", "/apis/apps/v1/deployments?watch=true", "kube:deployments.apps:watch"},
		{"POST", "/apis/apps/v1/namespaces/ns/deployments", "kube:deployments.apps:create"},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d", "kube:deployments.apps:update"},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "kube:deployments.apps:patch"},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments/d", "kube:deployments.apps:delete"},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments", "kube:deployments.apps:deletecollection"},
		{"PATCH", "/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/m", "kube:memcacheds.cache.example.com:patch"},

		// Cluster-scoped resources.
		{"GET", "/api/v1/nodes/n", "kube:nodes:get"},
		{"GET", "/api/v1/nodes", "kube:nodes:list"},
		{"DELETE", "/api/v1/nodes", "kube:nodes:deletecollection"},
		{"POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "kube:clusterroles.rbac.authorization.k8s.io:create"},
		{"PATCH", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/memcacheds.cache.example.com", "kube:customresourcedefinitions.apiextensions.k8s.io:patch"},

		// Namespaces themselves, and their subresources.
		{"GET", "/api/v1/namespaces", "kube:namespaces:list"},
		{"GET", "/api/v1/namespaces?watch=true", "kube:namespaces:watch"},
		{"GET", "/api/v1/namespaces/foo", "kube:namespaces:get"},
		{"POST", "/api/v1/namespaces", "kube:namespaces:create"},
		{"DELETE", "/api/v1/namespaces/foo", "kube:namespaces:delete"},
		{"DELETE", "/api/v1/namespaces", "kube:namespaces:deletecollection"},
		{"PUT", "/api/v1/namespaces/foo/status", "kube:namespaces/status:update"},
		{"PUT", "/api/v1/namespaces/foo/finalize", "kube:namespaces/finalize:update"},
		// A namespace's name that is also a resource's is still a name.
		{"GET", "/api/v1/namespaces/pods", "kube:namespaces:get"},

		// Subresources.
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", "kube:deployments.apps/status:patch"},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "kube:deployments.apps/scale:get"},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "kube:deployments.apps/scale:update"},
		{"POST", "/api/v1/namespaces/ns/pods/p/eviction", "kube:pods/eviction:create"},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", "kube:pods/log:get"},
		{"PATCH", "/apis/cache.example.com/v1alpha1/namespaces/ns/memcacheds/m/status", "kube:memcacheds.cache.example.com/status:patch"},
		{"PUT", "/api/v1/nodes/n/status", "kube:nodes/status:update"},
		// Parts after the subresource are the subresource's own.
		{"GET", "/api/v1/namespaces/ns/pods/p/proxy/metrics/x", "kube:pods/proxy:get"},
		{"POST", "/api/v1/namespaces/ns/services/s:8080/proxy/", "kube:services/proxy:create"},

		// The deprecated verb-in-path forms.
		{"GET", "/api/v1/watch/pods", "kube:pods:watch"},
		{"GET", "/api/v1/watch/namespaces/ns/pods", "kube:pods:watch"},
		{"GET", "/api/v1/watch/namespaces/ns/pods/p", "kube:pods:watch"},
		{"GET", "/api/v1/watch/namespaces", "kube:namespaces:watch"},
		{"GET", "/apis/apps/v1/watch/namespaces/ns/deployments?watch=false", "kube:deployments.apps:watch"},
		{"GET", "/api/v1/proxy/namespaces/ns/pods/p", "kube:pods:proxy"},
		{"GET", "/api/v1/proxy/namespaces/ns/pods/p/not/a/subresource", "kube:pods:proxy"},
		{"DELETE", "/api/v1/proxy/nodes/n", "kube:nodes:proxy"},

		// Paths that aren't resources.
		{"GET", "/apis", "kube:/apis:get"},
		{"GET", "/api", "kube:/api:get"},
		{"GET", "/api/v1", "kube:/api/v1:get"},
		{"GET", "/apis/apps", "kube:/apis/apps:get"},
		{"GET", "/apis/apps/v1", "kube:/apis/apps/v1:get"},
		{"GET", "/apis/apps/v1/", "kube:/apis/apps/v1/:get"},
		{"GET", "/version", "kube:/version:get"},
		{"GET", "/openapi/v3", "kube:/openapi/v3:get"},
		{"GET", "/healthz/etcd", "kube:/healthz/etcd:get"},
		{"HEAD", "/readyz", "kube:/readyz:head"},
		{"POST", "/apis", "kube:/apis:post"},
		{"GET", "/", "kube:/:get"},
		{"GET", "", "kube:/:get"},
		{"GET", "/other/v1/pods", "kube:/other/v1/pods:get"},
		{"GET", "/api/v1/watch", "kube:/api/v1/watch:get"},
		{"GET", "/api/v1//pods", "kube:/api/v1//pods:get"},

		// Methods the resolver has no verb for.
		{"OPTIONS", "/api/v1/pods", "kube:pods:options"},
		{"TRACE", "/version", "kube:/version:trace"},
		{"get", "/api/v1/pods", "kube:pods:unknown"},
		{"BREW", "/version", "kube:/version:unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			path, query := splitURL(tt.url)
			require.Equal(t, tt.want, points.Point(tt.method, path, query))
		})
	}
}

func TestParse_reads_the_parts_of_a_request(t *testing.T) {
	tests := []struct {
		method, url string
		want        points.Request
		object      bool
	}{
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d",
			points.Request{Verb: "patch", Resource: "deployments", Group: "apps", Namespace: "ns", Name: "d"}, true},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status",
			points.Request{Verb: "patch", Resource: "deployments", Group: "apps", Subresource: "status", Namespace: "ns", Name: "d"}, false},
		{"PATCH", "/api/v1/namespaces/foo",
			points.Request{Verb: "patch", Resource: "namespaces", Namespace: "foo", Name: "foo"}, true},
		{"PUT", "/api/v1/namespaces/foo/status",
			points.Request{Verb: "update", Resource: "namespaces", Subresource: "status", Namespace: "foo", Name: "foo"}, false},
		{"PATCH", "/api/v1/nodes/n",
			points.Request{Verb: "patch", Resource: "nodes", Name: "n"}, true},
		{"GET", "/api/v1/namespaces/ns/pods",
			points.Request{Verb: "list", Resource: "pods", Namespace: "ns"}, false},
		{"GET", "/api/v1/proxy/namespaces/ns/pods/p/x/y",
			points.Request{Verb: "proxy", Resource: "pods", Namespace: "ns", Name: "p"}, true},
		{"GET", "/apis",
			points.Request{Verb: "get", Path: "/apis"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url, func(t *testing.T) {
			path, query := splitURL(tt.url)
			got := points.Parse(tt.method, path, query)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.object, got.IsObject())
			require.Equal(t, tt.want.Resource != "", got.IsResource())
		})
	}
}

// splitURL splits u into its path and its query's parameters, as
// url.URL's Path and Query() would for the URLs here, which need no
// decoding. (The domain's tests, as the domain, import no network package.)
func splitURL(u string) (path string, query map[string][]string) {
	path, raw, _ := strings.Cut(u, "?")
	query = map[string][]string{}
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		query[k] = append(query[k], v)
	}
	return path, query
}

// verbs are every verb a point may end in.
var verbs = map[string]bool{
	points.Get: true, points.List: true, points.Watch: true, points.Create: true,
	points.Update: true, points.Patch: true, points.Delete: true,
	points.DeleteCollection: true, points.Proxy: true,
	"head": true, "post": true, "put": true, "options": true, "connect": true, "trace": true,
	points.Unknown: true,
}

func FuzzPoint(f *testing.F) {
	f.Add("GET", "/api/v1/namespaces/ns/pods", "watch=true")
	f.Add("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/status", "")
	f.Add("DELETE", "/api/v1/namespaces", "")
	f.Add("GET", "/apis", "")
	f.Fuzz(func(t *testing.T, method, path, rawQuery string) {
		_, query := splitURL("?" + rawQuery)
		r := points.Parse(method, path, query)
		p := r.Point()
		require.True(t, strings.HasPrefix(p, "kube:"), "point %q", p)
		verb := p[strings.LastIndexByte(p, ':')+1:]
		require.True(t, verbs[verb], "point %q ends in no known verb", p)
		require.Equal(t, r.Verb, verb)
		require.Equal(t, p, points.Point(method, path, query))
		if r.IsResource() {
			require.Empty(t, r.Path)
			require.NotContains(t, r.Resource, "/")
			require.NotContains(t, r.Subresource, "/")
		} else {
			require.Equal(t, "kube:"+r.Path+":"+verb, p)
		}
	})
}
