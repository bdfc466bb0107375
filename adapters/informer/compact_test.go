package informer

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// decoders are the two ways an object reaches the cache: decoded by the
// dynamic client and converted by the transform, as a list's items and a
// fake client's objects are, or decoded from the wire by NewDynamicClient's
// watch.
var decoders = []struct {
	name   string
	decode func(t *testing.T, doc string) (*cached, error)
}{
	{"converted", func(t *testing.T, doc string) (*cached, error) {
		obj, err := compact(decoded(t, doc))
		if err != nil {
			return nil, err
		}
		return obj.(*cached), nil
	}},
	{"from the wire", func(_ *testing.T, doc string) (*cached, error) { return decodeCompact([]byte(doc)) }},
}

// decoded returns doc as the dynamic client decodes it.
func decoded(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON([]byte(doc)))
	return u
}

func TestCompact_keeps_the_JSON_and_the_metadata_the_cache_reads(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doc    string
		json   string // what the cache holds
		status string // "" for none
	}{
		{
			name: "an object with a status",
			doc: `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached",
				"metadata":{"name":"a","namespace":"ns","uid":"a-uid","resourceVersion":"7","generation":3,
					"labels":{"app":"memcached"},"annotations":{"note":"x <&>"},"finalizers":["f"],
					"managedFields":[{"manager":"kubectl","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
				"spec":{"size":3,"ratio":0.5,"big":9007199254740993},
				"status":{"readyReplicas":3,"conditions":[{"type":"Available","status":"True"}]}}`,
			json: `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached",
				"metadata":{"name":"a","namespace":"ns","uid":"a-uid","resourceVersion":"7","generation":3,
					"labels":{"app":"memcached"},"annotations":{"note":"x <&>"},"finalizers":["f"]},
				"spec":{"size":3,"ratio":0.5,"big":9007199254740993},
				"status":{"readyReplicas":3,"conditions":[{"type":"Available","status":"True"}]}}`,
			status: `{"readyReplicas":3,"conditions":[{"type":"Available","status":"True"}]}`,
		},
		{
			name: "no status",
			doc:  `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`,
			json: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}`,
		},
		{
			name: "a null status",
			doc:  `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"status":null}`,
			json: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"status":null}`,
		},
		{
			name:   "an empty status",
			doc:    `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"status":{}}`,
			json:   `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"status":{}}`,
			status: `{}`,
		},
	} {
		for _, d := range decoders {
			t.Run(tc.name+"/"+d.name, func(t *testing.T) {
				c, err := d.decode(t, tc.doc)
				require.NoError(t, err)
				require.JSONEq(t, tc.json, string(c.json))
				if tc.status == "" {
					require.Nil(t, c.status)
				} else {
					require.JSONEq(t, tc.status, string(c.status))
					require.Equal(t, len(c.status), cap(c.status), "appending to the status can't reach the JSON")
				}
				require.Equal(t, len(c.json), cap(c.json), "appending to the JSON can't write into the cache's")
			})
		}
	}
}

func TestCompact_reads_the_metadata_the_informer_and_the_domain_read(t *testing.T) {
	for _, d := range decoders {
		t.Run(d.name, func(t *testing.T) {
			c, err := d.decode(t, `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached",
		"metadata":{"name":"a","namespace":"ns","uid":"a-uid","resourceVersion":"7","generation":3,
			"creationTimestamp":"2026-01-02T03:04:05Z","deletionTimestamp":"2026-01-02T03:04:06Z",
			"labels":{"app":"memcached"},"annotations":{"note":"x"},"finalizers":["f","g"],
			"ownerReferences":[{"apiVersion":"v1","kind":"Namespace","name":"ns","uid":"ns-uid"}]}}`)
			require.NoError(t, err)
			require.Equal(t, &cached{
				keyMeta:     keyMeta{name: "a", namespace: "ns", resourceVersion: "7"},
				uid:         "a-uid",
				deleting:    true,
				annotations: map[string]string{"note": "x"},
				finalizers:  []string{"f", "g"},
				json:        c.json,
			}, c, "nothing more than the informer and the domain read")
			require.NotNil(t, c.GetDeletionTimestamp())
			require.Equal(t, schema.GroupVersionKind{}, c.GetObjectKind().GroupVersionKind())
		})
	}
}

func TestCompact_takes_any_deletionTimestamp_for_a_deletion(t *testing.T) {
	for _, d := range decoders {
		for _, ts := range []string{`"yesterday"`, `7`, `{}`} {
			c, err := d.decode(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","deletionTimestamp":`+ts+`}}`)
			require.NoError(t, err)
			require.True(t, c.deleting, "%s: %s", d.name, ts)
		}
		c, err := d.decode(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","deletionTimestamp":null}}`)
		require.NoError(t, err)
		require.False(t, c.deleting, "%s: null", d.name)
		require.Nil(t, c.GetDeletionTimestamp())
	}
}

func TestCompact_is_idempotent(t *testing.T) {
	// The watch-list's store transforms each object, and the informer's
	// queue transforms what that store holds a second time.
	once, err := compact(decoded(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"status":{"phase":"Active"}}`))
	require.NoError(t, err)
	twice, err := compact(once)
	require.NoError(t, err)
	require.Same(t, once, twice)

	_, err = compact(&metav1.PartialObjectMetadata{})
	require.ErrorContains(t, err, "*v1.PartialObjectMetadata")
}

func TestCached_DeepCopyObject_copies_the_metadata(t *testing.T) {
	obj, err := compact(decoded(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","annotations":{"note":"x"},"finalizers":["f"]},"status":{}}`))
	require.NoError(t, err)
	c := obj.(*cached)
	cp := c.DeepCopyObject().(*cached)
	require.Equal(t, c, cp)
	cp.annotations["note"] = "changed"
	cp.finalizers[0] = "changed"
	require.Equal(t, "x", c.annotations["note"])
	require.Equal(t, []string{"f"}, c.finalizers)
}

func TestSlimOwned_keeps_the_key_and_the_controller_reference(t *testing.T) {
	yes := ptr.To(true)
	full := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "a", Namespace: "ns", UID: "a-uid", ResourceVersion: "7", Generation: 2,
			Labels: map[string]string{"app": "memcached"}, Annotations: map[string]string{"note": "x"},
			Finalizers: []string{"f"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "Namespace", Name: "ns", UID: "ns-uid"},
				{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "m", UID: "m-uid", Controller: yes, BlockOwnerDeletion: yes},
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
	}
	slim := slimOwned(false)
	want := &owned{keyMeta: keyMeta{namespace: "ns", name: "a", resourceVersion: "7"}, controller: []metav1.OwnerReference{
		{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "m", UID: "m-uid", Controller: yes},
	}}
	once, err := slim(full)
	require.NoError(t, err)
	require.Equal(t, want, once)
	twice, err := slim(once)
	require.NoError(t, err)
	require.Equal(t, want, twice, "idempotent")
	require.Equal(t, want, once.(*owned).DeepCopyObject())
	memcached := owners.Owner{Group: "cache.example.com", Kind: "Memcached", Namespaced: true}
	key, uid, ok := ownerOf(memcached, once)
	require.True(t, ok)
	require.Equal(t, ports.Key{Namespace: "ns", Name: "m"}, key)
	require.Equal(t, "m-uid", string(uid))
	_, _, ok = ownerOf(owners.Owner{Group: "apps", Kind: "Deployment", Namespaced: true}, once)
	require.False(t, ok, "another kind's Owns reads the same store and finds no owner")

	none, err := slim(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}})
	require.NoError(t, err)
	require.Equal(t, &owned{keyMeta: keyMeta{namespace: "ns", name: "b"}}, none)

	// For filters and metadata-only Caches, the metadata too, as JSON,
	// but for its managedFields.
	withMeta, err := slimOwned(true)(full.DeepCopy())
	require.NoError(t, err)
	wantMeta := full.DeepCopy()
	wantMeta.ManagedFields = nil
	wantJSON, err := json.Marshal(wantMeta)
	require.NoError(t, err)
	require.JSONEq(t, string(wantJSON), string(withMeta.(*owned).json))
	require.NotContains(t, string(withMeta.(*owned).json), "managedFields")
	key, _, _ = ownerOf(memcached, withMeta)
	require.Equal(t, ports.Key{Namespace: "ns", Name: "m"}, key)
}
