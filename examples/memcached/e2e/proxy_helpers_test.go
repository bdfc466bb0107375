package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kubetest"
)

// recorder is a recording proxy between the operator and the cluster's
// API server: a TLS server of its own CA that keeps the method, path,
// query and User-Agent of each request, and passes the request on, as it
// came, with its token, to the API server. The operator's TLS ends at the
// proxy, so what it records is what the API server receives. The test's
// own clients reach the API server directly: every request recorded is
// the operator's.
type recorder struct {
	mu       sync.Mutex
	requests []request
}

// request is one request the proxy passed on.
type request struct {
	method, path, userAgent string
	query                   url.Values
}

func (r request) String() string {
	q := r.query.Encode()
	if q != "" {
		q = "?" + q
	}
	return fmt.Sprintf("%s %s%s (%s)", r.method, r.path, q, r.userAgent)
}

// throughRecorder starts a recorder in front of c's API server, and
// returns it and kubeconfig, a kubeconfig of grant's, rewritten to reach
// the API server through it. The proxy stops when the test ends, after
// the operator the test starts later.
func throughRecorder(t *testing.T, c *kubetest.Cluster, kubeconfig []byte) (*recorder, []byte) {
	t.Helper()
	rec := &recorder{}
	p := c.Proxy(t, func(rw http.ResponseWriter, r *http.Request, next http.Handler) {
		rec.record(r)
		next.ServeHTTP(rw, r)
	})
	b, err := p.Kubeconfig(kubeconfig)
	require.NoError(t, err)
	return rec, b
}

func (rec *recorder) record(r *http.Request) {
	req := request{method: r.Method, path: r.URL.Path, userAgent: r.UserAgent(), query: r.URL.Query()}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.requests = append(rec.requests, req)
}

// all returns every request the proxy has passed on.
func (rec *recorder) all() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.requests)
}

// of returns the requests of resource, such as "configmaps": of its
// collection, in a namespace or all, or of one of its objects.
func (rec *recorder) of(resource string) []request {
	var out []request
	for _, r := range rec.all() {
		if r.target().resource == resource {
			out = append(out, r)
		}
	}
	return out
}

// target is what a request's path names: a resource, in a namespace or
// not, and one of its objects and a subresource of it, or the collection
// when name is "".
type target struct{ namespace, resource, name, subresource string }

// target parses r's path, /api/v1/... or /apis/<group>/<version>/...,
// then namespaces/<namespace>/ for a namespaced resource, then
// <resource>[/<name>[/<subresource>]]. A path of no resource, such as
// discovery's, is the zero target.
func (r request) target() target {
	segments := strings.Split(strings.Trim(r.path, "/"), "/")
	switch {
	case len(segments) > 2 && segments[0] == "api":
		segments = segments[2:]
	case len(segments) > 3 && segments[0] == "apis":
		segments = segments[3:]
	default:
		return target{}
	}
	var t target
	if len(segments) > 2 && segments[0] == "namespaces" {
		t.namespace, segments = segments[1], segments[2:]
	}
	t.resource = segments[0]
	if len(segments) > 1 {
		t.name = segments[1]
	}
	if len(segments) > 2 {
		t.subresource = segments[2]
	}
	return t
}

// watch reports whether r is a watch: client-go's reflector watches with
// watch=true, and its streaming list is a watch too, with
// sendInitialEvents=true.
func (r request) watch() bool { return r.query.Get("watch") == "true" }

// byClient counts requests by User-Agent, then by what they do, for a
// test's log: "WATCH configmaps", "GET configmaps/{name}", "PATCH
// memcacheds/{name}/status".
func byClient(requests []request) string {
	counts := map[string]int{}
	for _, r := range requests {
		verb, t := r.method, r.target()
		if r.watch() {
			verb = "WATCH"
		}
		what := t.resource
		if what == "" {
			what = r.path
		}
		if t.name != "" {
			what += "/{name}"
		}
		if t.subresource != "" {
			what += "/" + t.subresource
		}
		counts[fmt.Sprintf("%s | %s %s", r.userAgent, verb, what)]++
	}
	lines := make([]string, 0, len(counts))
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("%5d  %s", n, k))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
