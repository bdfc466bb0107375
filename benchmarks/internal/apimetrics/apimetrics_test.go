package apimetrics_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/benchmarks/internal/apimetrics"
)

const metrics = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="APPLY",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="bench.loam.dev",resource="memcacheds",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 10
apiserver_request_total{code="409",component="apiserver",dry_run="",group="bench.loam.dev",resource="memcacheds",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 1
# HELP apiserver_storage_objects [STABLE] Number of stored objects
# TYPE apiserver_storage_objects gauge
apiserver_storage_objects{resource="configmaps"} 12
apiserver_storage_objects{resource="memcacheds.bench.loam.dev"} -1
apiserver_storage_objects{resource="leases.coordination.k8s.io"} 3
`

func TestParse_reads_requests_and_stored_objects(t *testing.T) {
	s, err := apimetrics.Parse(strings.NewReader(metrics))
	require.NoError(t, err)
	require.Equal(t, 15.0, s.StoredObjects, "-1, a failed count, counts nothing")
	cm := apimetrics.Request{Verb: "APPLY", Resource: "configmaps", Code: "200"}
	status := apimetrics.Request{Verb: "APPLY", Group: "bench.loam.dev", Resource: "memcacheds", Subresource: "status", Code: "200"}
	require.Equal(t, 7.0, s.Requests[cm])
	require.Equal(t, 10.0, s.Requests[status])
	require.Equal(t, "APPLY memcacheds/status", status.String())

	since := s.Requests.Since(apimetrics.Requests{cm: 5, status: 10})
	require.Equal(t, 2.0, since[cm])
	require.NotContains(t, since, status, "no new requests of a kind leave it out")

	require.Equal(t, 21.0, s.Requests.Sum(func(r apimetrics.Request) bool { return r.Verb == "APPLY" }))
	require.Equal(t, []apimetrics.Count{{Kind: "APPLY memcacheds/status", N: 11}, {Kind: "APPLY configmaps", N: 10}},
		s.Requests.ByKind(func(apimetrics.Request) bool { return true }))
}

func TestIsWrite(t *testing.T) {
	for _, v := range []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"} {
		require.True(t, apimetrics.IsWrite(v), v)
	}
	for _, v := range []string{"GET", "LIST", "WATCH", "WATCHLIST"} {
		require.False(t, apimetrics.IsWrite(v), v)
	}
}
