package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest/wait"
)

// These tests read what kubectl reads of the Memcached CRD, from the API
// server itself rather than from the CRD's YAML: the Table that kubectl
// get asks for, and the discovery documents that resolve kubectl get mc
// and kubectl get all. No operator runs: the tests write the status
// themselves, so the cells they expect are theirs.

// tableAccept is the Accept header of kubectl get: the API server answers
// with a meta.k8s.io/v1 Table, whose columns, for a custom resource, are
// its CRD's printer columns after Name.
const tableAccept = "application/json;as=Table;g=meta.k8s.io;v=v1"

// age is what the API server prints in a date column of an object made
// moments ago: a few seconds, such as "0s" or "3s".
var age = regexp.MustCompile(`^[0-9]+s$`)

// columnsSetup installs the CRD in the shared cluster, and returns a
// namespace of the test's own, the Memcacheds in it, and a discovery
// client, as the cluster's admin. The test's Memcacheds are deleted when it
// ends: no garbage collector runs, and another test's operator, which
// watches every namespace, would otherwise reconcile them.
func columnsSetup(t *testing.T) (string, dynamic.ResourceInterface, discovery.DiscoveryInterface) {
	t.Helper()
	c := cluster.Cluster(t)
	crd, err := memcached.Memcached.CRD()
	require.NoError(t, err)
	require.NoError(t, c.InstallCRDs(t.Context(), crd))
	ns := c.Namespace(t)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	require.NoError(t, err)
	mcs := dyn.Resource(memcached.Memcached.GVR()).Namespace(ns)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		require.NoError(t, mcs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
	})
	return ns, mcs, dc
}

// createMemcached creates the Memcached name of size pods and, unless
// status is nil, then writes status through the status subresource, which
// is the only way a status reaches an object with that subresource.
func createMemcached(t *testing.T, mcs dynamic.ResourceInterface, ns, name string, size int64, status map[string]any) {
	t.Helper()
	u, err := mcs.Create(t.Context(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": memcached.Memcached.Group + "/" + memcached.Memcached.Version,
		"kind":       memcached.Memcached.Kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"size": size},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if status == nil {
		return
	}
	u.Object["status"] = status
	got, err := mcs.UpdateStatus(t.Context(), u, metav1.UpdateOptions{FieldValidation: "Strict"})
	require.NoError(t, err)
	require.Equal(t, status["readyReplicas"], got.Object["status"].(map[string]any)["readyReplicas"],
		"the status subresource stored the status")
}

// getTable GETs path with kubectl get's Accept header and decodes the
// Table the API server answers with.
func getTable(t *testing.T, dc discovery.DiscoveryInterface, path string) metav1.Table {
	t.Helper()
	raw, err := dc.RESTClient().Get().AbsPath(path).SetHeader("Accept", tableAccept).DoRaw(t.Context())
	require.NoError(t, err, "GET %s as a Table: %s", path, raw)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table), "the answer: %s", raw)
	require.Equal(t, "Table", table.Kind, "the answer: %s", raw)
	require.Equal(t, "meta.k8s.io/v1", table.APIVersion, "the answer: %s", raw)
	return table
}

// column is what a test checks of a Table's column definition.
type column struct{ name, typ, format string }

// columns returns what a test checks of table's column definitions, in
// their order.
func columns(table metav1.Table) []column {
	out := make([]column, 0, len(table.ColumnDefinitions))
	for _, d := range table.ColumnDefinitions {
		out = append(out, column{d.Name, d.Type, d.Format})
	}
	return out
}

// rowCells returns each row's cells but the last, its age, which the test
// checks on its own, since it depends on when the row was read.
func rowCells(t *testing.T, table metav1.Table) [][]any {
	t.Helper()
	out := make([][]any, 0, len(table.Rows))
	for _, r := range table.Rows {
		require.Len(t, r.Cells, len(table.ColumnDefinitions), "each row has a cell for each column")
		last := r.Cells[len(r.Cells)-1]
		require.IsType(t, "", last, "the Age cell of %v", r.Cells)
		require.Regexp(t, age, last, "the Age cell of %v", r.Cells)
		out = append(out, r.Cells[:len(r.Cells)-1])
	}
	return out
}

// kubectl get memcacheds prints, for each Memcached, its name, its size,
// its ready pods, the status of its Available condition and its age; a
// Memcached whose controller hasn't reported yet prints its size, and
// null cells for Ready and Available, which kubectl leaves blank, rather
// than a 0 or a False it never reported. The single object's Table has the same columns and
// the one row.
func TestColumns_kubectl_get_prints_Size_Ready_Available_and_Age(t *testing.T) {
	ns, mcs, dc := columnsSetup(t)
	createMemcached(t, mcs, ns, "serving", 3, map[string]any{
		"readyReplicas": int64(2),
		"conditions": []any{map[string]any{
			"type":               "Available",
			"status":             "True",
			"reason":             "MinimumReplicasAvailable",
			"message":            "2 of 3 pods are ready",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}},
	})
	createMemcached(t, mcs, ns, "starting", 1, nil)

	wantColumns := []column{
		{"Name", "string", "name"},
		{"Size", "integer", "int32"},
		{"Ready", "integer", "int32"},
		{"Available", "string", ""},
		{"Age", "date", ""},
	}
	// JSON numbers decode as float64s; a cell the JSONPath finds nothing
	// for is null.
	serving := []any{"serving", float64(3), float64(2), "True"}
	starting := []any{"starting", float64(1), nil, nil}

	gvr := memcached.Memcached.GVR()
	list := "/apis/" + gvr.Group + "/" + gvr.Version + "/namespaces/" + ns + "/" + gvr.Resource
	tests := []struct {
		name  string
		path  string
		cells [][]any
	}{
		{"the list", list, [][]any{serving, starting}},
		{"the object serving", list + "/serving", [][]any{serving}},
		{"the object starting", list + "/starting", [][]any{starting}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := getTable(t, dc, tt.path)
			require.Equal(t, wantColumns, columns(table), "the column definitions, in order")
			descriptions := map[string]string{}
			for _, d := range table.ColumnDefinitions {
				descriptions[d.Name] = d.Description
			}
			require.Equal(t, "How many memcached pods run.", descriptions["Size"])
			require.Equal(t, "How many of the pods are ready.", descriptions["Ready"])
			require.Equal(t, "Whether the Memcached serves: True, False or Unknown.", descriptions["Available"])
			require.Equal(t, tt.cells, rowCells(t, table), "the rows' cells, Age aside")
		})
	}
}

// kubectl get mc and kubectl get all find Memcacheds: discovery names mc
// as the resource's short name and all as its category, and kubectl's own
// expanders, client-go's restmapper, resolve them from discovery.
func TestColumns_mc_resolves_to_memcacheds_and_all_includes_them(t *testing.T) {
	_, _, dc := columnsSetup(t)
	gvr := memcached.Memcached.GVR()

	var found *metav1.APIResource
	wait.For(t, patience, func() bool {
		l, err := dc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return false
		}
		for i := range l.APIResources {
			if l.APIResources[i].Name == gvr.Resource {
				found = &l.APIResources[i]
			}
		}
		return found != nil
	}, "discovery never lists memcacheds")
	require.Equal(t, []string{"mc"}, found.ShortNames, "the short names discovery lists")
	require.Equal(t, []string{"all"}, found.Categories, "the categories discovery lists")

	cached := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, func(string) {})
	got, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: "mc"})
	require.NoError(t, err, "kubectl get mc")
	require.Equal(t, gvr, got, "what mc resolves to")

	all, ok := restmapper.NewDiscoveryCategoryExpander(cached).Expand("all")
	require.True(t, ok, "the category all expands")
	require.Contains(t, all, gvr.GroupResource(), "what kubectl get all lists")
}
