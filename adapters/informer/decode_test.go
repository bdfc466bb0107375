package informer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/ports"
)

func TestDecodeCompact_cuts_managedFields_wherever_they_are(t *testing.T) {
	const mf = `"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}]`
	for _, tc := range []struct{ name, metadata, want string }{
		{"first", `{` + mf + `,"name":"a"}`, `{"name":"a"}`},
		{"middle", `{"name":"a",` + mf + `,"namespace":"ns"}`, `{"name":"a","namespace":"ns"}`},
		{"last", `{"name":"a",` + mf + `}`, `{"name":"a"}`},
		{"alone", `{` + mf + `}`, `{}`},
		{"spaced", `{ "name" : "a" , ` + mf + ` , "namespace":"ns" }`, `{ "name" : "a" , "namespace":"ns" }`},
		{"an escaped key", `{"name":"a","\u006danagedFields":[]}`, `{"name":"a"}`},
		{"none", `{"name":"a"}`, `{"name":"a"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeCompact([]byte(`{"kind":"Memcached","metadata":` + tc.metadata + `,"status":{"ready":true}}` + "\n"))
			require.NoError(t, err)
			require.Equal(t, `{"kind":"Memcached","metadata":`+tc.want+`,"status":{"ready":true}}`, string(c.json),
				"the JSON as sent, but for managedFields and the white space after it")
			require.Equal(t, `{"ready":true}`, string(c.status))
			if tc.want != `{}` {
				require.Equal(t, "a", c.name)
			}
		})
	}
}

func TestDecodeCompact_refuses_what_is_not_a_JSON_object(t *testing.T) {
	for _, doc := range []string{
		``, `[]`, `"a"`, `{`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{"a":tru}`, `{"a":01}`, `{"a":1.}`, `{"a":1e}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}", `{"a":[1 2]}`, `{"a":1} {}`, `{"metadata":{"name":"a",}}`,
		strings.Repeat("[", maxDepth+2),
	} {
		_, err := decodeCompact([]byte(doc))
		require.ErrorIs(t, err, errSyntax, "%q", doc)
		require.False(t, json.Valid([]byte(doc)) && strings.HasPrefix(doc, "{"), "%q is JSON encoding/json accepts", doc)
	}
}

func TestCompactSerializer_decodes_a_Status_as_one(t *testing.T) {
	// A watch's ERROR event carries a Status, which client-go must read
	// as one to tell an expired resourceVersion apart.
	s := newCompactSerializers(dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer)
	var dec runtime.Decoder
	for _, info := range s.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			dec = info.Serializer
		}
	}
	require.NotNil(t, dec)
	obj, _, err := dec.Decode([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old"}`), nil, nil)
	require.NoError(t, err)
	require.Equal(t, "Status", obj.GetObjectKind().GroupVersionKind().Kind)

	obj, _, err = dec.Decode([]byte(`{"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1","metadata":{"name":"a"}}`), nil, nil)
	require.NoError(t, err)
	require.IsType(t, &cached{}, obj)

	into := &unstructured.UnstructuredList{}
	obj, _, err = dec.Decode([]byte(`{"kind":"MemcachedList","apiVersion":"cache.example.com/v1alpha1","metadata":{},"items":[]}`), nil, into)
	require.NoError(t, err)
	require.Same(t, into, obj, "a type asked for is decoded as the dynamic client does")
}

// expiringServer serves a list and watches of one Memcached; the first
// watch ends at once with an ERROR event saying its resourceVersion
// expired, as the API server does after compaction.
type expiringServer struct {
	mu       sync.Mutex
	requests []string // each request's query, in order
}

func (s *expiringServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.RawQuery)
	first := len(s.requests) == 1
	s.mu.Unlock()
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	const item = `{"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5",` +
		`"managedFields":[{"manager":"m"}]},"status":{"ready":true}}`
	switch {
	case first:
		_, _ = w.Write([]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old resource version"}}` + "\n"))
	case q.Get("watch") != "true":
		_, _ = w.Write([]byte(`{"kind":"MemcachedList","apiVersion":"cache.example.com/v1alpha1","metadata":{"resourceVersion":"5"},"items":[` + item + `]}`))
	default:
		_, _ = w.Write([]byte(`{"type":"ADDED","object":` + item + "}\n" +
			`{"type":"BOOKMARK","object":{"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1","metadata":{"resourceVersion":"5","annotations":{"` +
			metav1.InitialEventsAnnotationKey + `":"true"}}}}` + "\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

func TestNewDynamicClient_feeds_the_cache_from_the_wire_and_reads_a_watch_s_errors(t *testing.T) {
	s := &expiringServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, err := NewDynamicClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	p, err := NewPrimary(client, schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"},
		Config{Notify: func(ports.Event) {}, Logger: logr.Discard()})
	require.NoError(t, err)
	r := Start(t.Context(), p.Informer())
	defer r.Stop()
	require.True(t, r.WaitForSync(t.Context()))

	obj, found, err := p.Get(ports.Key{Namespace: "ns", Name: "a"})
	require.NoError(t, err)
	require.True(t, found)
	require.NotContains(t, string(obj.JSON), "managedFields")
	require.JSONEq(t, `{"ready":true}`, string(obj.Status))

	s.mu.Lock()
	defer s.mu.Unlock()
	require.GreaterOrEqual(t, len(s.requests), 2)
	require.Contains(t, s.requests[0], "sendInitialEvents=true", "the first request is a watch-list")
	require.NotContains(t, s.requests[1], "resourceVersion=", "the expired watch's Status was read as one: the informer started again from no resourceVersion")
}

// FuzzDecodeCompact holds the wire decoder to the dynamic client's path:
// whatever it accepts, encoding/json accepts, and it reads the same
// metadata and keeps the same JSON, but for managedFields.
func FuzzDecodeCompact(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"v1","kind":"Memcached","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7",` +
		`"managedFields":[{"manager":"m"}],"annotations":{"a":"b"},"finalizers":["f"],"deletionTimestamp":"2026-01-02T03:04:05Z"},"spec":{"size":1.5e3},"status":{"ready":true}}`))
	f.Add([]byte(`{"metadata":{"\u006danagedFields":1,"name":"\u00e9"},"status":null}`))
	f.Add([]byte(`{"kind":"Status"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCompact(data)
		if err != nil {
			return
		}
		require.True(t, json.Valid(data), "accepted JSON encoding/json refuses: %q", data)
		u := &unstructured.Unstructured{}
		if u.UnmarshalJSON(data) != nil {
			return // no kind, or a kind the dynamic client refuses
		}
		want, err := compactUnstructured(u)
		if err != nil {
			return
		}
		require.Equal(t, want.keyMeta, c.keyMeta)
		require.Equal(t, want.uid, c.uid)
		require.Equal(t, want.finalizers, c.finalizers)
		require.Equal(t, want.annotations, c.annotations)
		require.Equal(t, want.deleting, c.deleting)
		require.Equal(t, semantic(t, want.json), semantic(t, c.json))
		require.Equal(t, semantic(t, want.status), semantic(t, c.status))
	})
}

// semantic returns the value doc encodes, without metadata.managedFields,
// which a document with duplicate keys may still hold after the first.
func semantic(t *testing.T, doc []byte) any {
	if doc == nil {
		return nil
	}
	var v any
	require.NoError(t, json.Unmarshal(doc, &v))
	if m, ok := v.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
	}
	return v
}

// BenchmarkDecode compares the two ways a watched object reaches the
// cache: decoded by client-go's dynamic client and converted, or read
// from the wire.
func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"annotations":{"example.com/contact":"team@example.com"},` +
		`"creationTimestamp":"2026-01-02T03:04:05Z","finalizers":["cache.example.com/cleanup"],"generation":2,"labels":{"app":"memcached","tier":"cache"},` +
		`"managedFields":[{"apiVersion":"cache.example.com/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}},"manager":"kubectl","operation":"Apply","time":"2026-01-02T03:04:05Z"},` +
		`{"apiVersion":"cache.example.com/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}}}},"manager":"memcached","operation":"Apply","subresource":"status","time":"2026-01-02T03:04:05Z"}],` +
		`"name":"memcached-0","namespace":"ns","resourceVersion":"123456","uid":"0f4a2a3c-5a3e-4a0e-9f39-111111111111"},` +
		`"spec":{"size":3},"status":{"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"ready","observedGeneration":2,"reason":"Applied","status":"True","type":"Ready"}],"observedGeneration":2}}` + "\n")
	b.Run("converted", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			obj, _, err := unstructured.UnstructuredJSONScheme.Decode(doc, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := compact(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("from the wire", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := decodeCompact(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzDecodeWatchEvent holds the envelope's reader to the dynamic client's
// serializer: whatever it accepts, encoding/json accepts, and where both
// read an event they read the same type and object bytes.
func FuzzDecodeWatchEvent(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":{"kind":"Memcached","metadata":{"name":"a"}}}`))
	f.Add([]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410}}` + "\n"))
	f.Add([]byte(`{"object":null,"type":"BOOKMARK","\u0074ype":"X"}`))
	var stream runtime.Serializer
	for _, info := range dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			stream = info.StreamSerializer.Serializer
		}
	}
	require.NotNil(f, stream)
	f.Fuzz(func(t *testing.T, data []byte) {
		var got metav1.WatchEvent
		if decodeWatchEvent(data, &got) != nil {
			return
		}
		require.True(t, json.Valid(data), "accepted JSON encoding/json refuses: %q", data)
		var want metav1.WatchEvent
		if _, _, err := stream.Decode(data, nil, &want); err != nil {
			return
		}
		require.Equal(t, want.Type, got.Type)
		require.Equal(t, string(want.Object.Raw), string(got.Object.Raw))
	})
}

func TestWatchEventSerializer_reads_the_envelope_and_leaves_the_rest_to_the_serializer_it_wraps(t *testing.T) {
	s := newCompactSerializers(dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer)
	var events runtime.Serializer
	for _, info := range s.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			events = info.StreamSerializer.Serializer
		}
	}
	require.IsType(t, watchEventSerializer{}, events)
	buf := []byte(`{"type":"MODIFIED","object":{"kind":"Memcached","metadata":{"name":"a"}}}`)
	var ev metav1.WatchEvent
	_, _, err := events.Decode(buf, nil, &ev)
	require.NoError(t, err)
	require.Equal(t, "MODIFIED", ev.Type)
	require.Equal(t, `{"kind":"Memcached","metadata":{"name":"a"}}`, string(ev.Object.Raw))
	copy(buf, bytes.Repeat([]byte("x"), len(buf)))
	require.Equal(t, `{"kind":"Memcached","metadata":{"name":"a"}}`, string(ev.Object.Raw), "the object is a copy: the stream reuses its buffer")

	_, _, err = events.Decode([]byte(`{"type":"ADDED","object":`), nil, &ev)
	require.ErrorIs(t, err, errSyntax)
}

// A member given twice in a watch event is read as client-go's serializer
// reads it (sigs.k8s.io/json into a metav1.WatchEvent): the last, but that
// a null leaves what came before it.
func TestDecodeWatchEvent_reads_a_member_given_twice_as_client_go_does(t *testing.T) {
	var stream runtime.Serializer
	for _, info := range dynamic.ConfigFor(&rest.Config{}).NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			stream = info.StreamSerializer.Serializer
		}
	}
	const a, b = `{"kind":"Memcached","metadata":{"name":"a"}}`, `{"kind":"Memcached","metadata":{"name":"b"}}`
	for _, tc := range []struct {
		name, event, typ, object string
		refused                  bool
	}{
		{"an object, then null", `{"type":"ADDED","object":` + a + `,"object":null}`, "ADDED", a, false},
		{"null, then an object", `{"type":"ADDED","object":null,"object":` + a + `}`, "ADDED", a, false},
		{"two objects", `{"type":"ADDED","object":` + a + `,"object":` + b + `}`, "ADDED", b, false},
		{"a type, then null", `{"type":"MODIFIED","type":null,"object":` + a + `}`, "MODIFIED", a, false},
		{"two types", `{"type":"MODIFIED","type":"DELETED","object":` + a + `}`, "DELETED", a, false},
		{"a type that isn't a string", `{"type":5,"type":"ADDED","object":` + a + `}`, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got metav1.WatchEvent
			_, _, wantErr := stream.Decode([]byte(tc.event), nil, &want)
			gotErr := decodeWatchEvent([]byte(tc.event), &got)
			require.Equal(t, tc.refused, wantErr != nil, "client-go: %v", wantErr)
			require.Equal(t, tc.refused, gotErr != nil, "the wire decoder: %v", gotErr)
			if tc.refused {
				return
			}
			require.Equal(t, tc.typ, want.Type)
			require.Equal(t, tc.object, string(want.Object.Raw))
			require.Equal(t, want.Type, got.Type)
			require.Equal(t, string(want.Object.Raw), string(got.Object.Raw))
		})
	}
}
