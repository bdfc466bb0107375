package sharded

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// shardRange is one range of the 64-bit FNV-1a hash space, [start, end),
// as a shard selector writes it.
type shardRange struct{ start, end string }

func (r shardRange) selector() string {
	return fmt.Sprintf("shardRange(object.metadata.uid, '%s', '%s')", r.start, r.end)
}

// quarters are the four ranges of a 4-shard split, as ListOptions.
// ShardSelector's documentation gives them. They are the quarters of the
// hash space, so the top two bits of an object's hash name its shard.
func quarters() []shardRange {
	return []shardRange{
		{"0x0000000000000000", "0x4000000000000000"},
		{"0x4000000000000000", "0x8000000000000000"},
		{"0x8000000000000000", "0xc000000000000000"},
		{"0xc000000000000000", "0x10000000000000000"},
	}
}

// uidHash is the hash the server puts uid in a range by, as the sharding
// package computes it on the client side.
func uidHash(t *testing.T, uid types.UID) uint64 {
	t.Helper()
	h, err := strconv.ParseUint(sharding.HashField(string(uid)), 16, 64)
	require.NoError(t, err, "hash of uid %s", uid)
	return h
}

// kind is a resource the tests shard: ConfigMaps, and the custom objects of
// a CRD, both through the dynamic client.
type kind struct {
	name   string
	gvr    schema.GroupVersionResource
	crd    *apiextensionsv1.CustomResourceDefinition // installed before the test, if set
	object func(namespace, name string) *unstructured.Unstructured
	// shardInfo says whether a sharded list says which selector made it.
	// Kubernetes v1.37 filters a custom resource's list but leaves out its
	// shardInfo: the storage layer sets it only on a list type that
	// implements metav1.ShardedListInterface, and UnstructuredList, which
	// custom resources are listed into, does not.
	shardInfo bool
}

func kinds() []kind {
	return []kind{
		{
			name:      "ConfigMap",
			gvr:       schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			shardInfo: true,
			object: func(namespace, name string) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1",
					"kind":       "ConfigMap",
					"metadata":   map[string]any{"namespace": namespace, "name": name},
					"data":       map[string]any{"name": name},
				}}
			},
		},
		{
			name: "CustomResource",
			gvr:  schema.GroupVersionResource{Group: "sharded.kubetest.loam.dev", Version: "v1", Resource: "pieces"},
			crd:  pieceCRD(),
			object: func(namespace, name string) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "sharded.kubetest.loam.dev/v1",
					"kind":       "Piece",
					"metadata":   map[string]any{"namespace": namespace, "name": name},
					"spec":       map[string]any{"name": name},
				}}
			},
		},
	}
}

// pieceCRD is a namespaced custom resource with a free-form spec.
func pieceCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "pieces.sharded.kubetest.loam.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "sharded.kubetest.loam.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "pieces", Singular: "piece", Kind: "Piece", ListKind: "PieceList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

// objects is a client of k's objects in a namespace of the test's own,
// with k's CRD installed.
type objects struct {
	kind      kind
	namespace string
	client    dynamic.ResourceInterface
}

func newObjects(t *testing.T, k kind) objects {
	t.Helper()
	c := cluster.Cluster(t)
	if k.crd != nil {
		require.NoError(t, c.InstallCRDs(t.Context(), k.crd))
	}
	client, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	ns := c.Namespace(t)
	return objects{kind: k, namespace: ns, client: client.Resource(k.gvr).Namespace(ns)}
}

// create creates an object named name and returns its UID.
func (o objects) create(t *testing.T, name string) types.UID {
	t.Helper()
	got, err := o.client.Create(t.Context(), o.kind.object(o.namespace, name), metav1.CreateOptions{})
	require.NoError(t, err, "create %s %s/%s", o.kind.name, o.namespace, name)
	return got.GetUID()
}

// createN creates n objects and returns their UIDs.
func (o objects) createN(t *testing.T, prefix string, n int) map[types.UID]bool {
	t.Helper()
	uids := make(map[types.UID]bool, n)
	for i := range n {
		uids[o.create(t, fmt.Sprintf("%s-%d", prefix, i))] = true
	}
	return uids
}

// list lists the objects with a shard selector and returns their UIDs and
// the list's metadata.
func (o objects) list(t *testing.T, selector string) ([]types.UID, metav1.ListMeta) {
	t.Helper()
	list, err := o.client.List(t.Context(), metav1.ListOptions{ShardSelector: selector})
	require.NoError(t, err, "list %s with shard selector %s", o.kind.gvr.Resource, selector)
	var meta metav1.ListMeta
	if raw, ok := list.Object["metadata"].(map[string]any); ok {
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &meta), "list metadata")
	}
	uids := make([]types.UID, 0, len(list.Items))
	for _, item := range list.Items {
		uids = append(uids, item.GetUID())
	}
	return uids, meta
}

// TestShardSelectorSplitsLists lists 200 objects with each selector of a
// 4-shard split: the four lists are disjoint, together they are all 200,
// each says which selector made it (a ConfigMap list; see kind.shardInfo),
// and each object is in the shard its UID's hash, computed on the client
// side, says.
func TestShardSelectorSplitsLists(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			objs := newObjects(t, k)
			created := objs.createN(t, "obj", 200)

			shardOf := map[types.UID]int{}
			for i, r := range quarters() {
				uids, meta := objs.list(t, r.selector())
				if k.shardInfo {
					require.NotNil(t, meta.ShardInfo, "shard %d: the list has no shardInfo", i)
					require.Equal(t, r.selector(), meta.ShardInfo.Selector, "shard %d: shardInfo.selector", i)
				} else {
					require.Nil(t, meta.ShardInfo, "shard %d: shardInfo of a custom resource's list, which v1.37 leaves out: update kind.shardInfo", i)
				}
				require.NotEmpty(t, uids, "shard %d of 200 objects is empty", i)
				for _, uid := range uids {
					prev, seen := shardOf[uid]
					require.False(t, seen, "object %s is in shard %d and in shard %d", uid, prev, i)
					shardOf[uid] = i
					require.Equal(t, i, int(uidHash(t, uid)>>62),
						"object %s (hash %s) is in shard %d", uid, sharding.HashField(string(uid)), i)
				}
			}
			listed := map[types.UID]bool{}
			for uid := range shardOf {
				listed[uid] = true
			}
			require.Equal(t, created, listed, "the four shards together")
		})
	}
}

// TestShardSelectorFiltersWatches watches half the hash space and creates
// 100 objects, then a sentinel in that half: when the sentinel's ADDED
// arrives, every earlier create has been delivered or filtered, and the
// ADDED events are exactly the objects in the half.
func TestShardSelectorFiltersWatches(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			// Shard 0 of a 2-shard split: the objects whose hash has its
			// top bit clear.
			lowerHalf := shardRange{"0x0000000000000000", "0x8000000000000000"}
			objs := newObjects(t, k)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()

			start, err := objs.client.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			w, err := objs.client.Watch(ctx, metav1.ListOptions{
				ResourceVersion: start.GetResourceVersion(),
				ShardSelector:   lowerHalf.selector(),
			})
			require.NoError(t, err)
			defer w.Stop()

			inHalf := func(uid types.UID) bool { return uidHash(t, uid)>>63 == 0 }
			want := map[types.UID]bool{}
			created := objs.createN(t, "obj", 100)
			for uid := range created {
				if inHalf(uid) {
					want[uid] = true
				}
			}
			require.NotEmpty(t, want, "none of 100 objects is in the lower half")
			require.Less(t, len(want), len(created), "all of 100 objects are in the lower half")

			// The server picks UIDs: create sentinels until one is in the
			// half (each is with probability 1/2). Those that are not must
			// not arrive either.
			var sentinel types.UID
			for i := 0; sentinel == ""; i++ {
				require.Less(t, i, 64, "no sentinel landed in the lower half")
				if uid := objs.create(t, fmt.Sprintf("sentinel-%d", i)); inHalf(uid) {
					sentinel = uid
				}
			}
			want[sentinel] = true

			got := map[types.UID]bool{}
			added := 0
			for !got[sentinel] {
				select {
				case ev, ok := <-w.ResultChan():
					require.True(t, ok, "the watch ended after %d ADDED events", added)
					require.NotEqual(t, watch.Error, ev.Type, "watch error: %v", ev.Object)
					if ev.Type != watch.Added {
						continue
					}
					obj, ok := ev.Object.(*unstructured.Unstructured)
					require.True(t, ok, "ADDED event of a %T", ev.Object)
					require.False(t, got[obj.GetUID()], "object %s added twice", obj.GetName())
					got[obj.GetUID()] = true
					added++
				case <-ctx.Done():
					t.Fatalf("the sentinel's ADDED did not arrive: %d ADDED events of %d: %v", added, len(want), context.Cause(ctx))
				}
			}
			require.Equal(t, want, got, "the ADDED events up to the sentinel")
			require.Equal(t, len(want), added)
		})
	}
}
