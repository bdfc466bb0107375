package informer

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/loam-dev/loam/ports"
)

var memcacheds = schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"}

// listingServer is an API server with WatchList off, as the real one
// answers: a watch that asks for initial events first is refused, so
// client-go's reflector lists. Its first list comes in two pages; its
// first watch ends at once, its resourceVersion expired, and so does the
// list from that resourceVersion, so that the reflector lists again from
// none, and finds a changed state.
type listingServer struct {
	mu       sync.Mutex
	requests []string // each request's query, in order, with its answer's code
	watches  int
}

// Objects, their members in an order no map keeps, as the API server
// sends them; b, as a built-in resource's list sends its items, without
// a kind or an apiVersion.
const (
	listedA = `{"metadata":{"name":"a","namespace":"ns","uid":"a-uid","resourceVersion":"5","managedFields":[{"manager":"m"}]},` +
		`"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1","spec":{"size":1},"status":{"ready":%t}}`
	listedB = `{"metadata":{"name":"b","namespace":"ns","uid":"b-uid","resourceVersion":"6"},"spec":{"size":2}}`
	listedC = `{"metadata":{"name":"c","namespace":"ns","uid":"c-uid","resourceVersion":"15"},"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1"}`
)

func (s *listingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	code := http.StatusOK
	var body string
	switch {
	case q.Get("sendInitialEvents") == "true":
		code = http.StatusUnprocessableEntity
		body = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":422,` +
			`"message":"sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"}`
	case q.Get("watch") == "true":
		s.mu.Lock()
		s.watches++
		first := s.watches == 1
		s.requests = append(s.requests, r.URL.RawQuery+" 200")
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			_, _ = w.Write([]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410,"reason":"Expired","message":"too old resource version"}}` + "\n"))
			return
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case q.Get("continue") == "p2":
		body = `{"kind":"MemcachedList","apiVersion":"cache.example.com/v1alpha1","metadata":{"resourceVersion":"10"},"items":[` + listedB + `]}`
	case q.Get("resourceVersion") == "0":
		body = `{"kind":"MemcachedList","apiVersion":"cache.example.com/v1alpha1","metadata":{"resourceVersion":"10","continue":"p2"},"items":[` +
			fmt.Sprintf(listedA, false) + `]}`
	case q.Get("resourceVersion") == "10":
		code = http.StatusGone
		body = `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version: 10 (20)"}`
	default:
		body = `{"kind":"MemcachedList","apiVersion":"cache.example.com/v1alpha1","metadata":{"resourceVersion":"20"},"items":[` +
			fmt.Sprintf(listedA, true) + "," + listedC + `]}`
	}
	if q.Get("watch") != "true" {
		s.mu.Lock()
		s.requests = append(s.requests, fmt.Sprintf("%s %d", r.URL.RawQuery, code))
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}

func (s *listingServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func TestNewDynamicClient_lists_straight_into_the_compact_form_pages_and_relists_after_a_410(t *testing.T) {
	s := &listingServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client, err := NewDynamicClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	p, err := NewPrimary(client, memcacheds, Config{Notify: func(ports.Event) {}, Logger: logr.Discard()})
	require.NoError(t, err)
	r := Start(t.Context(), p.Informer())
	defer r.Stop()
	require.True(t, r.WaitForSync(t.Context()))

	get := func(name string) (ports.Object, bool) {
		obj, found, err := p.Get(ports.Key{Namespace: "ns", Name: name})
		require.NoError(t, err)
		return obj, found
	}
	a, found := get("a")
	require.True(t, found)
	require.Equal(t, `{"metadata":{"name":"a","namespace":"ns","uid":"a-uid","resourceVersion":"5"},"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1","spec":{"size":1},"status":{"ready":false}}`,
		string(a.JSON), "the JSON as the API server sent it, its members in its order, but for managedFields")
	b, found := get("b")
	require.True(t, found, "the second page's item")
	require.Equal(t, `{"kind":"Memcached","apiVersion":"cache.example.com/v1alpha1","metadata":{"name":"b","namespace":"ns","uid":"b-uid","resourceVersion":"6"},"spec":{"size":2}}`,
		string(b.JSON), "an item without a kind and apiVersion gets the list's, as the dynamic client's list gives it")

	// The watch from resourceVersion 10 expires, and so does the list
	// from it: the reflector lists again from none.
	require.Eventually(t, func() bool {
		_, found := get("c")
		return found
	}, 30*time.Second, 10*time.Millisecond, "the relist never reached the cache; requests: %v", s.seen())
	_, found = get("b")
	require.False(t, found, "the relist replaced the cache: b is gone")
	a, _ = get("a")
	require.JSONEq(t, `{"ready":true}`, string(a.Status))

	var lists []string
	for _, q := range s.seen() {
		if !strings.Contains(q, "watch=") {
			lists = append(lists, q)
		}
	}
	require.Equal(t, []string{"limit=500&resourceVersion=0 200", "continue=p2&limit=500 200", "limit=500&resourceVersion=10 410", "limit=500 200"}, lists,
		"the first list in two pages, the list from the expired resourceVersion, and the list from none, in pages, since the first was")
}

func TestListCompact_sends_the_dynamic_client_s_request_and_returns_its_errors(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.String())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "forbidden") {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"no"}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[]}`))
	}))
	defer srv.Close()
	client, err := NewDynamicClient(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	lister := client.(compactLister)
	opts := metav1.ListOptions{LabelSelector: "a=b", FieldSelector: "metadata.name=x", Limit: 7, Continue: "c",
		ResourceVersion: "4", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, TimeoutSeconds: ptr.To[int64](9),
		ShardSelector: "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')"}
	for _, tc := range []struct {
		name      string
		gvr       schema.GroupVersionResource
		namespace string
	}{
		{"namespaced, in a group", memcacheds, "ns"},
		{"in every namespace", memcacheds, ""},
		{"in the core group", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ns"},
		{"refused", schema.GroupVersionResource{Version: "v1", Resource: "forbidden"}, "ns"},
		{"a namespace no path holds", memcacheds, "a/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			_, wantErr := client.Resource(tc.gvr).Namespace(tc.namespace).List(t.Context(), opts)
			list, gotErr := lister.listCompact(t.Context(), tc.gvr, tc.namespace, opts)
			if wantErr != nil {
				require.Nil(t, list)
				require.Equal(t, wantErr.Error(), gotErr.Error())
				require.Equal(t, fmt.Sprintf("%T", wantErr), fmt.Sprintf("%T", gotErr))
			} else {
				require.NoError(t, gotErr)
				require.Equal(t, "3", list.ResourceVersion)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) > 0 {
				require.Len(t, got, 2)
				require.Equal(t, got[0], got[1], "the dynamic client's request, and listCompact's")
			}
		})
	}
}

// BenchmarkDecodeList compares the two ways a list of 100 objects
// reaches the cache: decoded by client-go's dynamic client and each item
// converted, or read from the wire.
func BenchmarkDecodeList(b *testing.B) {
	item := `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"annotations":{"example.com/contact":"team@example.com"},` +
		`"creationTimestamp":"2026-01-02T03:04:05Z","finalizers":["cache.example.com/cleanup"],"generation":2,"labels":{"app":"memcached","tier":"cache"},` +
		`"managedFields":[{"apiVersion":"cache.example.com/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}},"manager":"kubectl","operation":"Apply","time":"2026-01-02T03:04:05Z"}],` +
		`"name":"memcached-%d","namespace":"ns","resourceVersion":"123456","uid":"0f4a2a3c-5a3e-4a0e-9f39-%012d"},` +
		`"spec":{"size":3},"status":{"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z","message":"ready","observedGeneration":2,"reason":"Applied","status":"True","type":"Ready"}],"observedGeneration":2}}`
	items := make([]string, 100)
	for i := range items {
		items[i] = fmt.Sprintf(item, i, i)
	}
	doc := []byte(`{"apiVersion":"cache.example.com/v1alpha1","kind":"MemcachedList","metadata":{"resourceVersion":"123457"},"items":[` + strings.Join(items, ",") + `]}`)
	plain, wire := dynamicSerializers()
	b.Run("converted", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			l, err := decodeListWith(plain, doc, false)
			if err != nil || len(l.Items) != 100 {
				b.Fatal(err)
			}
		}
	})
	b.Run("from the wire", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			l, err := decodeListWith(wire, doc, true)
			if err != nil || len(l.Items) != 100 {
				b.Fatal(err)
			}
		}
	})
}
