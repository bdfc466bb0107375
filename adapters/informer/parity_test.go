package informer

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// The wire decoder is held to client-go's decoding in both directions:
// whatever client-go reads, a watch event or a list, it reads, and reads
// the same, and whatever it reads that client-go refuses is one of the
// deliberate differences below. client-go's side is the dynamic client's
// own serializers, driven by client-go's own watch decoder.

// dynamicSerializers returns client-go's dynamic client's serializers,
// and the wire decoder's on top of them.
func dynamicSerializers() (plain, wire runtime.NegotiatedSerializer) {
	plain = dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer
	return plain, newCompactSerializers(plain)
}

// decodeEvent reads the first event of the JSON stream data with ns, as
// a rest.Request's watch does: its framer, client-go's watch decoder, and
// the object decoded as the informer's transform would hand it on, an
// *unstructured.Unstructured made compact.
func decodeEvent(ns runtime.NegotiatedSerializer, data []byte) (watch.EventType, runtime.Object, error) {
	objects, events, framer, err := runtime.NewClientNegotiator(ns, schema.GroupVersion{}).StreamDecoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		return "", nil, err
	}
	frames := framer.NewFrameReader(io.NopCloser(bytes.NewReader(data)))
	typ, obj, err := restclientwatch.NewDecoder(streaming.NewDecoder(frames, events), objects).Decode()
	if err != nil {
		return "", nil, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		c, err := compactUnstructured(u)
		if err != nil {
			return "", nil, err
		}
		return typ, c, nil
	}
	return typ, obj, nil
}

// requireSameObject fails unless want and got are the same object as the
// cache holds it: the same metadata and the same JSON, managedFields
// aside.
func requireSameObject(t *testing.T, want, got runtime.Object, msgAndArgs ...any) {
	t.Helper()
	w, wantCached := want.(*cached)
	g, gotCached := got.(*cached)
	if !wantCached || !gotCached {
		require.Equal(t, want, got, msgAndArgs...)
		return
	}
	require.Equal(t, w.keyMeta, g.keyMeta, msgAndArgs...)
	require.Equal(t, w.uid, g.uid, msgAndArgs...)
	require.Equal(t, w.finalizers, g.finalizers, msgAndArgs...)
	require.Equal(t, w.annotations, g.annotations, msgAndArgs...)
	require.Equal(t, w.deleting, g.deleting, msgAndArgs...)
	require.Equal(t, semantic(t, w.json), semantic(t, g.json), msgAndArgs...)
	require.Equal(t, semantic(t, w.status), semantic(t, g.status), msgAndArgs...)
}

// envelopeClientGoRefuses reports whether client-go refuses data's
// envelope for the kind or apiVersion its serializer reads first, with
// encoding/json, ignoring case: one that is neither a string nor null.
// The wire decoder reads only an event's type and object, and such an
// envelope, which the API server never sends, as they say: a deliberate
// difference (decodeWatchEvent).
func envelopeClientGoRefuses(data []byte) bool {
	var envelope struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	return json.Unmarshal(data, &envelope) != nil
}

// mapsClientGoRefuses reports whether client-go's decoding of doc into
// maps fails where the JSON is valid: a number out of float64's range,
// such as 1e400, which the API server never sends, since it decodes what
// it stores so too. The wire decoder keeps a number's bytes as sent, and
// reads such an object: a deliberate difference.
func mapsClientGoRefuses(doc []byte) bool {
	var m any
	return json.Valid(doc) && utiljson.Unmarshal(doc, &m) != nil
}

// FuzzWatchEventParity runs each input, one event of a watch's stream,
// through client-go's watch decoder twice, with the dynamic client's own
// serializers and with the wire decoder's: whatever the first reads, the
// second reads, the same type and the same object as the cache holds it;
// whatever the second reads and the first refuses is a deliberate
// difference.
func FuzzWatchEventParity(f *testing.F) {
	const obj = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7",` +
		`"managedFields":[{"manager":"m"}],"annotations":{"a":"b"},"finalizers":["f"]},"spec":{"size":3},"status":{"ready":true}}`
	for _, seed := range []string{
		`{"type":"ADDED","object":` + obj + `}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired"}}`,
		`{"type":"BOOKMARK","object":{"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1","metadata":{"resourceVersion":"9"}}}`,
		// Found by this fuzz: client-go keeps a member's value when a
		// null follows it.
		`{"type":"ADDED","object":` + obj + `,"object":null}`,
		`{"type":"MODIFIED","object":` + obj + `,"type":null}`,
		`{"type":5,"type":"ADDED","object":` + obj + `}`,
		// Objects client-go reads in a way of its own.
		`{"type":"ADDED","object":{"kind":"Status","apiVersion":"example.com/v1","metadata":{"name":"s"}}}`,
		`{"type":"ADDED","object":{"kind":"Memcached","KIND":"Status","apiVersion":"v1","metadata":{"name":"a"}}}`,
		`{"type":"ADDED","object":{"kind":"Memcached","metadata":{"name":"no-apiVersion"}}}`,
		`{"type":"ADDED","object":{"kind":"Memcached","apiVersion":"a/b/c","metadata":{"name":"a"}}}`,
		`{"type":"ADDED","object":{"kind":"Memcached","apiVersion":"example.com/","metadata":{"name":"a"}}}`,
		`{"type":"ADDED","object":{"kind":"Memcached","\u212aind":"Other","apiVersion":"v2","metadata":{"name":"a"}}}`,
		// Deliberate differences.
		`{"type":"ADDED","object":` + obj + `,"kind":5}`,
		`{"type":"ADDED","object":{"kind":"Memcached","apiVersion":"v2","spec":{"n":1e400}}}`,
	} {
		f.Add([]byte(seed))
	}
	plain, wire := dynamicSerializers()
	f.Fuzz(func(t *testing.T, data []byte) {
		wantType, want, wantErr := decodeEvent(plain, data)
		gotType, got, gotErr := decodeEvent(wire, data)
		if wantErr == nil {
			require.NoError(t, gotErr, "client-go reads %q", data)
			require.Equal(t, wantType, gotType)
			requireSameObject(t, want, got, "%q", data)
			return
		}
		if gotErr == nil {
			var ev metav1.WatchEvent
			_ = utiljson.Unmarshal(data, &ev)
			require.True(t, envelopeClientGoRefuses(data) || mapsClientGoRefuses(ev.Object.Raw),
				"read %q, which client-go refuses (%v), and not for a difference kept on purpose", data, wantErr)
		}
	})
}

// decodeListWith decodes data as a rest.Result's Into does, with the
// decoder ns has for JSON: into an UnstructuredList, whose items are then
// made compact as the informer's transform makes them, or into a
// *compactList.
func decodeListWith(ns runtime.NegotiatedSerializer, data []byte, wire bool) (*compactList, error) {
	dec, err := runtime.NewClientNegotiator(ns, schema.GroupVersion{}).Decoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		return nil, err
	}
	if wire {
		list := &compactList{}
		if _, _, err := dec.Decode(data, nil, list); err != nil {
			return nil, err
		}
		return list, nil
	}
	u := &unstructured.UnstructuredList{}
	if _, _, err := dec.Decode(data, nil, u); err != nil {
		return nil, err
	}
	list := &compactList{}
	return list, list.from(u)
}

// FuzzDecodeListParity decodes each input, a list's answer, as the
// dynamic client's list does and as the wire decoder does: whatever the
// first reads, the second reads, the same resourceVersion, continue token
// and items, as the cache holds them; whatever the second reads and the
// first refuses is a deliberate difference.
func FuzzDecodeListParity(f *testing.F) {
	const item = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7",` +
		`"managedFields":[{"manager":"m"}]},"spec":{"size":3},"status":{"ready":true}}`
	for _, seed := range []string{
		`{"kind":"MemcachedList","apiVersion":"cache.example.com/v1alpha1","metadata":{"resourceVersion":"10","continue":"c","remainingItemCount":3},"items":[` + item + `,` + item + `]}`,
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[{"metadata":{"name":"a"},"data":{"k":"v"}},{}]}`,
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":null}`,
		`{"kind":"ConfigMapList","apiVersion":"v1","items":[{"kind":"","metadata":{"name":"a"}}]}`,
		`{"kind":"ConfigMapList","apiVersion":"v1","items":[null]}`,
		`{"kind":"ConfigMapList","KIND":"Other","items":[]}`,
		`{"apiVersion":"v1","items":[]}`,
		`{"kind":"List","apiVersion":"v1","metadata":{"remainingItemCount":1.0,"resourceVersion":5},"items":[{"metadata":{"name":"a"}}],"items":[]}`,
		`{"kind":"MemcachedList","apiVersion":"v1","items":[{"kind":"Memcached","spec":{"n":1e400}}]}`,
	} {
		f.Add([]byte(seed))
	}
	plain, wire := dynamicSerializers()
	f.Fuzz(func(t *testing.T, data []byte) {
		want, wantErr := decodeListWith(plain, data, false)
		got, gotErr := decodeListWith(wire, data, true)
		if wantErr == nil {
			require.NoError(t, gotErr, "client-go reads %q", data)
			require.Equal(t, want.TypeMeta, got.TypeMeta)
			require.Equal(t, want.ListMeta, got.ListMeta)
			require.Len(t, got.Items, len(want.Items))
			for i := range want.Items {
				requireSameObject(t, want.Items[i], got.Items[i], "item %d of %q", i, data)
			}
			return
		}
		if gotErr == nil {
			require.True(t, mapsClientGoRefuses(data), "read %q, which client-go refuses (%v), and not for a difference kept on purpose", data, wantErr)
		}
	})
}

// nested returns an object whose member a holds arrays levels-1 deep: a
// document levels deep, valid JSON in every other way.
func nested(levels int) []byte {
	return []byte(`{"kind":"Memcached","apiVersion":"v2","metadata":{"name":"a"},"a":` +
		strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `}`)
}

// The depth limit is encoding/json's and sigs.k8s.io/json's, 10,000
// levels of objects and arrays, for an object and for the event that
// carries it, one level deeper.
func TestDecode_reads_10000_levels_of_nesting_and_refuses_10001_as_client_go_does(t *testing.T) {
	plain, wire := dynamicSerializers()
	for _, tc := range []struct {
		name   string
		levels int
		reads  bool
	}{
		{"at the limit", maxDepth, true},
		{"one past it", maxDepth + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := nested(tc.levels)
			var m any
			require.Equal(t, tc.reads, json.Valid(doc), "encoding/json")
			require.Equal(t, tc.reads, utiljson.Unmarshal(doc, &m) == nil, "sigs.k8s.io/json, as client-go decodes")
			_, err := decodeCompact(doc)
			if tc.reads {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, errSyntax)
				require.ErrorContains(t, err, "nested too deeply")
			}

			// In an event, the object is one level deeper: this one
			// nests levels-1 deep, so the event is levels deep.
			event := []byte(`{"type":"ADDED","object":` + string(nested(tc.levels-1)) + `}`)
			_, want, wantErr := decodeEvent(plain, event)
			_, got, gotErr := decodeEvent(wire, event)
			require.Equal(t, tc.reads, wantErr == nil, "client-go: %v", wantErr)
			require.Equal(t, tc.reads, gotErr == nil, "the wire decoder: %v", gotErr)
			var ev metav1.WatchEvent
			err = decodeWatchEvent(event, &ev)
			if tc.reads {
				require.NoError(t, err)
				requireSameObject(t, want, got)
			} else {
				require.ErrorContains(t, err, "nested too deeply", "the envelope's own reader refuses it too, not only the framer")
			}
		})
	}
}
