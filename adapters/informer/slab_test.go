package informer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/owners"
	"github.com/loam-dev/loam/ports"
)

// testStore is the store of a slab's tests: the packed objects it holds
// by key, which a compaction moves.
type testStore struct {
	mu    sync.Mutex
	items map[string]*packed
}

func newTestStore() (*testStore, *slab) {
	st := &testStore{items: map[string]*packed{}}
	return st, &slab{refs: storeRefs(st.list)}
}

func (st *testStore) list() []any {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]any, 0, len(st.items))
	for _, p := range st.items {
		out = append(out, p)
	}
	return out
}

func (st *testStore) set(key string, p *packed) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.items[key] = p
}

// slabObject returns the cached form of an object named name whose spec is
// spec, with a status.
func slabObject(name, spec string) *cached {
	doc := fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"ns","uid":"uid-%s","resourceVersion":"7"},"spec":%q,"status":{"ready":true}}`, name, name, spec)
	c, err := decodeCompact([]byte(doc))
	if err != nil {
		panic(err)
	}
	return c
}

func TestPacked_reads_what_was_packed(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *cached
	}{
		{"no status, no lists", &cached{keyMeta: keyMeta{namespace: "ns", name: "a", resourceVersion: "1"}, uid: "u", json: []byte(`{"metadata":{"name":"a"}}`)}},
		{"from the wire", slabObject("b", "x")},
		{"texts not in the JSON", &cached{
			keyMeta: keyMeta{namespace: "elsewhere", name: `"quoted"`, resourceVersion: "99"}, uid: "not-there", deleting: true,
			finalizers: []string{"f", "", "g/h"}, annotations: map[string]string{"k": "v", "": "", "é": "\x00"},
			json: []byte(`{"x":1}`),
		}},
		{"empty lists, not nil", &cached{finalizers: []string{}, annotations: map[string]string{}, json: []byte(`{}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := newTestStore()
			p, err := s.pack(tc.c)
			require.NoError(t, err)
			require.Equal(t, string(tc.c.json), string(p.json()))
			require.Equal(t, len(p.json()), cap(p.json()), "appending to the JSON can't write into the slab")
			if tc.c.status == nil {
				require.Nil(t, p.status())
			} else {
				require.Equal(t, string(tc.c.status), string(p.status()))
				require.Equal(t, len(p.status()), cap(p.status()))
			}
			require.Equal(t, tc.c.namespace, p.GetNamespace())
			require.Equal(t, tc.c.name, p.GetName())
			require.Equal(t, tc.c.resourceVersion, p.GetResourceVersion())
			require.Equal(t, tc.c.uid, p.GetUID())
			require.Equal(t, tc.c.deleting, p.GetDeletionTimestamp() != nil)
			require.Equal(t, tc.c.finalizers, p.GetFinalizers())
			require.Equal(t, tc.c.annotations, p.GetAnnotations())
		})
	}
}

func TestPacked_hands_out_copies_nothing_can_change_the_cache_through(t *testing.T) {
	_, s := newTestStore()
	c := slabObject("a", "x")
	c.finalizers, c.annotations = []string{"f"}, map[string]string{"note": "x"}
	p, err := s.pack(c)
	require.NoError(t, err)

	p.GetFinalizers()[0] = "changed"
	p.GetAnnotations()["note"] = "changed"
	p.SetName("changed")
	_ = append(p.json(), "appended"...)
	cp := p.DeepCopyObject().(*packed)
	cp.SetNamespace("changed")

	require.Equal(t, []string{"f"}, p.GetFinalizers())
	require.Equal(t, map[string]string{"note": "x"}, p.GetAnnotations())
	require.Equal(t, "a", p.GetName())
	require.Equal(t, "ns", cp.GetNamespace())
	require.Equal(t, string(c.json), string(p.json()))
}

func TestPacked_keeps_texts_found_in_the_JSON_as_places(t *testing.T) {
	_, s := newTestStore()
	c := slabObject("memcached-00001", "x")
	p, err := s.pack(c)
	require.NoError(t, err)
	rec := p.record()
	// The namespace, name, resourceVersion and uid are all in the JSON:
	// each costs a few bytes, not its length.
	require.Less(t, len(rec), jsonAt+len(c.json)+4*4+2, "record of %d bytes for a JSON of %d", len(rec), len(c.json))
}

func TestSlab_compacts_so_that_updates_of_one_object_keep_it_bounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects int
		updates int
		spec    int // the spec's bytes
	}{
		{"one object", 1, 20_000, 100},
		{"a hundred objects", 100, 20_000, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, s := newTestStore()
			spec := strings.Repeat("s", tc.spec)
			for i := range tc.objects {
				p, err := s.pack(slabObject(fmt.Sprint(i), spec))
				require.NoError(t, err)
				st.set(fmt.Sprint(i), p)
			}
			record := len(st.items["0"].record())
			live := tc.objects * record
			for i := range tc.updates {
				key := fmt.Sprint(i % tc.objects)
				p, err := s.pack(slabObject(key, spec))
				require.NoError(t, err)
				st.set(key, p)
				appended, _ := s.footprint()
				// What the store's records are in: the chunks placed in
				// since the last compaction. Garbage passes neither a
				// quarter of the live bytes and the slack, nor a record.
				require.LessOrEqual(t, appended, live+live/4+slabSlack+record, "after %d updates", i+1)
			}
			require.Positive(t, s.compactions, "the garbage was collected")
			for key, p := range st.items {
				require.Equal(t, string(slabObject(key, spec).json), string(p.json()), "each record moved whole")
			}
		})
	}
}

func TestSlab_never_rewrites_a_record_a_reader_holds(t *testing.T) {
	st, s := newTestStore()
	held := map[string][]byte{}
	want := map[string]string{}
	for i := range 50 {
		key := fmt.Sprint(i)
		p, err := s.pack(slabObject(key, strings.Repeat(key, 100)))
		require.NoError(t, err)
		st.set(key, p)
		held[key], want[key] = p.json(), string(p.json())
	}
	before := s.compactions
	for i := range 5_000 {
		key := fmt.Sprint(i % 50)
		p, err := s.pack(slabObject(key, strings.Repeat("u", 100+i%7)))
		require.NoError(t, err)
		st.set(key, p)
	}
	require.Greater(t, s.compactions, before, "the slab compacted meanwhile")
	for _, key := range slices.Sorted(maps.Keys(held)) {
		require.Equal(t, want[key], string(held[key]), "what a reader was handed before the compactions is unchanged")
	}
}

// TestSlab_readers_and_a_writer_race_free runs readers of the store's
// objects while the writer packs and compacts, for the race detector: a
// reader loads a ref once, and every record it reads is whole.
func TestSlab_readers_and_a_writer_race_free(t *testing.T) {
	st, s := newTestStore()
	for i := range 20 {
		p, err := s.pack(slabObject(fmt.Sprint(i), "x"))
		require.NoError(t, err)
		st.set(fmt.Sprint(i), p)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, item := range st.list() {
					p := item.(*packed)
					doc := p.json()
					if !bytes.HasPrefix(doc, []byte(`{"metadata":{"name":"`+p.GetName()+`"`)) {
						panic(fmt.Sprintf("a torn record: %s", doc))
					}
				}
			}
		})
	}
	for i := range 3_000 {
		key := fmt.Sprint(i % 20)
		p, err := s.pack(slabObject(key, strings.Repeat("y", i%200)))
		require.NoError(t, err)
		st.set(key, p)
	}
	close(done)
	wg.Wait()
	require.Positive(t, s.compactions)
}

// FuzzRecord holds a packed record to what was packed into it, whatever
// its texts, JSON and status.
func FuzzRecord(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"a"},"status":{}}`), 27, 2, "ns", "a", "7", "u", true, "f\x00g", "k\x00v")
	f.Add([]byte(`{}`), -1, 0, "", "", "", "", false, "", "")
	f.Fuzz(func(t *testing.T, doc []byte, statusAt, statusLen int, ns, name, version, uid string, deleting bool, fins, anns string) {
		fields := packedFields{json: doc, namespace: ns, name: name, version: version, uid: uid, deleting: deleting}
		if statusAt >= 0 && statusLen > 0 && statusAt+statusLen <= len(doc) {
			fields.status = doc[statusAt : statusAt+statusLen]
		}
		if fins != "" {
			fields.finalizers = strings.Split(fins, "\x00")
		}
		if anns != "" {
			fields.annotations = map[string]string{}
			parts := strings.Split(anns, "\x00")
			for i := 0; i+1 < len(parts); i += 2 {
				fields.annotations[parts[i]] = parts[i+1]
			}
		}
		require.NoError(t, checkFields(fields))
		_, s := newTestStore()
		p := &packed{}
		require.NoError(t, s.put(&p.ref, func(dst []byte) []byte { return appendRecord(dst, fields) }))
		rec := p.record()
		require.Equal(t, doc, recordJSON(rec))
		if fields.status == nil {
			require.Nil(t, recordStatus(rec))
		} else {
			require.Equal(t, fields.status, recordStatus(rec))
		}
		require.Equal(t, deleting, recordDeleting(rec))
		for i, want := range []string{ns, name, version, uid} {
			require.Equal(t, want, string(recordText(rec, i)))
		}
		finalizers, annotations, err := recordLists(rec)
		require.NoError(t, err)
		require.Equal(t, fields.finalizers, finalizers)
		require.Equal(t, fields.annotations, annotations)
	})
}

func TestPackingOwned_keeps_the_key_and_the_controller_reference_alone(t *testing.T) {
	yes := true
	full := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "a", Namespace: "ns", UID: "a-uid", ResourceVersion: "7",
			Labels: map[string]string{"app": "memcached"}, Finalizers: []string{"f"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "Namespace", Name: "ns", UID: "ns-uid"},
				{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "m", UID: "m-uid", Controller: &yes, BlockOwnerDeletion: &yes},
			},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
	}
	memcached := owners.Owner{Group: "cache.example.com", Kind: "Memcached", Namespaced: true}
	for _, keepMeta := range []bool{false, true} {
		t.Run(fmt.Sprintf("metadata kept: %t", keepMeta), func(t *testing.T) {
			_, s := newTestStore()
			transform := packingOwned(s, keepMeta)
			obj, err := transform(full.DeepCopy())
			require.NoError(t, err)
			again, err := transform(obj)
			require.NoError(t, err)
			require.Same(t, obj, again, "idempotent")
			p := obj.(*packedOwned)
			require.Equal(t, []string{"ns", "a", "7"}, []string{p.GetNamespace(), p.GetName(), p.GetResourceVersion()})
			require.Empty(t, p.GetUID())
			require.Nil(t, p.GetFinalizers())
			require.Nil(t, p.GetLabels())
			require.Equal(t, []metav1.OwnerReference{
				{APIVersion: "cache.example.com/v1alpha1", Kind: "Memcached", Name: "m", UID: "m-uid", Controller: &yes},
			}, p.controller())
			key, uid, ok := ownerOf(memcached, p)
			require.True(t, ok)
			require.Equal(t, ports.Key{Namespace: "ns", Name: "m"}, key)
			require.Equal(t, "m-uid", string(uid))
			_, _, ok = ownerOf(memcached, p.DeepCopyObject())
			require.True(t, ok, "a copy is an owned object too")
			if !keepMeta {
				require.Nil(t, p.metaJSON())
				return
			}
			want := full.DeepCopy()
			want.ManagedFields = nil
			doc, err := json.Marshal(want)
			require.NoError(t, err)
			require.JSONEq(t, string(doc), string(p.metaJSON()))
		})
	}

	_, s := newTestStore()
	none, err := packingOwned(s, false)(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}})
	require.NoError(t, err)
	require.Nil(t, none.(*packedOwned).controller())
	_, _, ok := ownerOf(memcached, none)
	require.False(t, ok)
}

// BenchmarkPacked reports what packing costs an event, and reading a
// packed object costs a Get, over a decoded Memcached with annotations
// and a finalizer: before the slab, the transform handed the decoded
// object on and Get read its fields, neither allocating.
//
//	go test -run '^$' -bench Packed -benchmem ./adapters/informer/
func BenchmarkPacked(b *testing.B) {
	doc := []byte(`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"annotations":{"example.com/contact":"team@example.com"},` +
		`"creationTimestamp":"2026-01-02T03:04:05Z","finalizers":["cache.example.com/cleanup"],"generation":2,"labels":{"app":"memcached"},` +
		`"name":"memcached-0","namespace":"ns","resourceVersion":"123456","uid":"0f4a2a3c-5a3e-4a0e-9f39-111111111111"},` +
		`"spec":{"size":3,"image":"memcached:1.6"},"status":{"readyReplicas":3}}`)
	c, err := decodeCompact(doc)
	require.NoError(b, err)
	b.Run("pack", func(b *testing.B) {
		st, s := newTestStore()
		b.ReportAllocs()
		for b.Loop() {
			p, err := s.pack(c)
			if err != nil {
				b.Fatal(err)
			}
			st.set("ns/memcached-0", p)
		}
	})
	b.Run("read", func(b *testing.B) {
		_, s := newTestStore()
		p, err := s.pack(c)
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			rec := p.record()
			if _, _, err := recordLists(rec); err != nil {
				b.Fatal(err)
			}
			_ = recordText(rec, textUID)
			_, _ = recordJSON(rec), recordStatus(rec)
		}
	})
}

// TestPacked_searches_the_JSON_for_its_texts_a_few_times_at_most holds
// the search for the texts of an object of many annotations to a few
// times its JSON's length: each event's object is packed by the queue's
// goroutine, which the informer's every other event waits for.
func TestPacked_searches_the_JSON_for_its_texts_a_few_times_at_most(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value func(i int) string
		// placed is whether every annotation is found in the JSON.
		placed bool
	}{
		{"values as they are in the JSON", func(i int) string { return fmt.Sprintf("value-%d", i) }, true},
		{"values the JSON escapes", func(i int) string { return fmt.Sprintf(`say "%d"`, i) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			annotations := map[string]string{}
			finalizers := []string{}
			for i := range 1_000 {
				annotations[fmt.Sprintf("example.com/key-%d", i)] = tc.value(i)
				finalizers = append(finalizers, fmt.Sprintf("example.com/finalizer-%d", i))
			}
			doc, err := json.Marshal(map[string]any{
				"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u", "resourceVersion": "1",
					"annotations": annotations, "finalizers": finalizers},
				"spec": map[string]any{"data": strings.Repeat("x", 10_000)},
			})
			require.NoError(t, err)
			c, err := decodeCompact(doc)
			require.NoError(t, err)
			f := packedFields{json: c.json, namespace: c.namespace, name: c.name, version: c.resourceVersion, uid: string(c.uid),
				finalizers: c.finalizers, annotations: c.annotations}

			rec, searched := appendRecordSearching(make([]byte, recordHead), f)
			require.LessOrEqual(t, searched, 10*len(doc), "searched %d bytes for a JSON of %d", searched, len(doc))
			if tc.placed {
				// Each text found in the JSON: a few bytes each.
				require.Less(t, len(rec), recordHead+jsonAt+len(f.json)+8*3_000+64)
			}
			p := &packed{}
			_, s := newTestStore()
			require.NoError(t, s.put(&p.ref, func(dst []byte) []byte { return appendRecord(dst, f) }))
			require.Equal(t, c.finalizers, p.GetFinalizers())
			require.Equal(t, c.annotations, p.GetAnnotations())
		})
	}
}

// TestPacked_DeepCopyObject_stays_deeply_equal_through_a_compaction holds
// a packed object to what client-go's cache mutation detector
// (KUBE_CACHE_MUTATION_DETECTOR) checks of every object the store holds:
// that it is reflect.DeepEqual to the DeepCopyObject taken when it was
// stored, long after. A compaction moves the store's ref: a copy that
// kept a ref of its own would point elsewhere, and the detector would
// call the cache modified, and panic.
func TestPacked_DeepCopyObject_stays_deeply_equal_through_a_compaction(t *testing.T) {
	st, s := newTestStore()
	p, err := s.pack(slabObject("a", "x"))
	require.NoError(t, err)
	st.set("a", p)
	o, err := s.packOwned(&owned{keyMeta: keyMeta{namespace: "ns", name: "o", resourceVersion: "1"}})
	require.NoError(t, err)
	st.mu.Lock()
	st.items["o"] = &o.packed
	st.mu.Unlock()
	copies := []any{p.DeepCopyObject(), o.DeepCopyObject()}
	before := s.compactions
	for i := range 2_000 {
		_, err := s.pack(slabObject(fmt.Sprint(i), strings.Repeat("u", 100)))
		require.NoError(t, err)
	}
	require.Greater(t, s.compactions, before, "the slab compacted meanwhile")
	require.True(t, reflect.DeepEqual(p, copies[0]), "the copy of the primary object")
	require.True(t, reflect.DeepEqual(o, copies[1]), "the copy of the owned object")
}

// TestSlab_never_moves_a_record_in_an_allocation_of_its_own holds a
// compaction to the chunks: a large record, in an allocation of its own,
// holds no one else's garbage, and copying it at each compaction would
// cost a store of large objects their every byte again, and twice their
// heap meanwhile.
func TestSlab_never_moves_a_record_in_an_allocation_of_its_own(t *testing.T) {
	st, s := newTestStore()
	large := map[string]*byte{}
	for i := range 3 {
		key := fmt.Sprint("large-", i)
		p, err := s.pack(slabObject(key, strings.Repeat("l", maxChunk)))
		require.NoError(t, err)
		st.set(key, p)
		large[key] = p.p.Load()
	}
	for i := range 5_000 {
		key := fmt.Sprint(i % 20)
		p, err := s.pack(slabObject(key, strings.Repeat("s", 100+i%7)))
		require.NoError(t, err)
		st.set(key, p)
	}
	require.Positive(t, s.compactions, "the small records' garbage was collected")
	for key, at := range large {
		require.Same(t, at, st.items[key].p.Load(), "%s stayed where it was", key)
	}
	_, live := s.footprint()
	require.Less(t, live, maxChunk, "the large records count in no compaction's live bytes")

	// Updating the large records alone leaves the chunks as they are.
	before := s.compactions
	for i := range 500 {
		key := fmt.Sprint("large-", i%3)
		p, err := s.pack(slabObject(key, strings.Repeat("m", maxChunk)))
		require.NoError(t, err)
		st.set(key, p)
	}
	require.Equal(t, before, s.compactions, "no compaction for records no chunk holds")
}
