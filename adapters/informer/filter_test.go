package informer_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

// generationChanged keeps the updates that change an object's generation.
var generationChanged = informer.Filter{Name: "generation", Keep: func(old, new metav1.Object) bool {
	return old.GetGeneration() != new.GetGeneration()
}}

// notPaused keeps the updates of objects not annotated paused.
var notPaused = informer.Filter{Name: "paused", Keep: func(_, new metav1.Object) bool {
	return new.GetAnnotations()["paused"] != "true"
}}

// seen collects the metadata a filter is handed.
type seen struct {
	mu       sync.Mutex
	old, new []metav1.Object
}

func (s *seen) filter() informer.Filter {
	return informer.Filter{Name: "seen", Keep: func(old, new metav1.Object) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.old, s.new = append(s.old, old), append(s.new, new)
		return true
	}}
}

func (s *seen) last(t *testing.T) (old, new metav1.Object) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.new, "the filter was handed no update")
	return s.old[len(s.old)-1], s.new[len(s.new)-1]
}

// generation returns u at resourceVersion rv and generation gen, as the API
// server would write it.
func generation(u *unstructured.Unstructured, rv string, gen int64) *unstructured.Unstructured {
	u = u.DeepCopy()
	u.SetResourceVersion(rv)
	u.SetGeneration(gen)
	return u
}

func TestPrimary_filters_changes_but_never_adds_deletions_or_resyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := generation(object("ns", "a", map[string]any{"spec": map[string]any{"size": int64(1)}}), "1", 1)
		a.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl"}})
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"}, a)
		var inputs seen
		var queued keys
		p, err := informer.NewPrimary(client, memcacheds, informer.Config{
			Resync: time.Hour, Notify: queued.add, Logger: logr.Discard(),
			Filters: []informer.Filter{inputs.filter(), generationChanged, notPaused},
		})
		require.NoError(t, err)
		run(t, p.Informer())
		key := ports.Key{Namespace: "ns", Name: "a"}
		require.Equal(t, []ports.Key{key}, queued.take(t), "an add is never filtered")

		// A write of the status alone: a new resourceVersion, the same
		// generation. Skipped, and cached all the same.
		status := generation(a, "2", 1)
		status.Object["status"] = map[string]any{"readyReplicas": int64(1)}
		require.NoError(t, client.Tracker().Update(memcacheds, status, "ns"))
		synctest.Wait()
		require.Empty(t, queued.take(t), "a status-only change is skipped")
		got, _, err := p.Get(key)
		require.NoError(t, err)
		require.JSONEq(t, `{"readyReplicas":1}`, string(got.Status), "the cache holds the skipped change")
		old, new := inputs.last(t)
		require.Equal(t, []string{"1", "2"}, []string{old.GetResourceVersion(), new.GetResourceVersion()})
		require.Equal(t, "a-uid", string(new.GetUID()), "the filters read the object's whole metadata")
		require.Nil(t, new.GetManagedFields(), "but for its managedFields, which the cache doesn't hold")

		// A change of spec: a new generation, which every filter keeps.
		spec := generation(status, "3", 2)
		spec.Object["spec"] = map[string]any{"size": int64(2)}
		require.NoError(t, client.Tracker().Update(memcacheds, spec, "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{key}, queued.take(t))

		// Every filter must keep an update: one that only notPaused skips
		// is skipped.
		paused := generation(spec, "4", 3)
		paused.SetAnnotations(map[string]string{"paused": "true"})
		require.NoError(t, client.Tracker().Update(memcacheds, paused, "ns"))
		synctest.Wait()
		require.Empty(t, queued.take(t), "a change one filter skips is skipped")

		// The resync hands every object again, unfiltered: a skipped
		// object is still reconciled by it.
		time.Sleep(time.Hour + time.Second)
		synctest.Wait()
		require.Equal(t, []ports.Key{key}, queued.takeResyncs(t))

		require.NoError(t, client.Tracker().Delete(memcacheds, "ns", "a"))
		synctest.Wait()
		require.Equal(t, []ports.Key{key}, queued.take(t), "a deletion is never filtered")
	})
}

func TestPrimary_without_filters_queues_every_change(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := generation(object("ns", "a", nil), "1", 1)
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"}, a)
		var queued keys
		p, err := informer.NewPrimary(client, memcacheds, informer.Config{Notify: queued.add, Logger: logr.Discard()})
		require.NoError(t, err)
		run(t, p.Informer())
		queued.take(t)
		status := generation(a, "2", 1)
		status.Object["status"] = map[string]any{"readyReplicas": int64(1)}
		require.NoError(t, client.Tracker().Update(memcacheds, status, "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "a"}}, queued.take(t), "today's behaviour: a status write queues")
	})
}

func TestPrimary_lets_through_and_records_an_update_whose_filter_panics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := portsmock.NewMockRecorder(gomock.NewController(t))
		a := generation(object("ns", "a", nil), "1", 1)
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"}, a)
		boom := informer.Filter{Name: "boom", Keep: func(_, new metav1.Object) bool {
			if new.GetLabels()["boom"] == "yes" {
				panic("the filter panics on this one")
			}
			return true
		}}
		var queued keys
		p, err := informer.NewPrimary(client, memcacheds, informer.Config{
			Notify: queued.add, Logger: logr.Discard(), Recorder: rec,
			// generationChanged would skip the update: the panic comes
			// first, and lets it through.
			Filters: []informer.Filter{boom, generationChanged},
		})
		require.NoError(t, err)
		run(t, p.Informer())
		queued.take(t)

		rec.EXPECT().MappingPanicked(gomock.Any(), `filter "boom" of memcacheds.cache.example.com`,
			ports.Cause{Resource: "memcacheds.cache.example.com", Key: ports.Key{Namespace: "ns", Name: "a"}}, gomock.Not(gomock.Nil())).Times(1)
		labelled := generation(a, "2", 1)
		labelled.SetLabels(map[string]string{"boom": "yes"})
		require.NoError(t, client.Tracker().Update(memcacheds, labelled, "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "a"}}, queued.take(t), "the update a panicking filter was handed queues")
	})
}

// owning returns a Deployment a controls, at resourceVersion rv and
// generation gen.
func owning(owner, rv string, gen int64) *metav1.PartialObjectMetadata {
	d := deployment("ns", "d", ref("cache.example.com/v1alpha1", "Memcached", owner, true))
	d.ResourceVersion, d.Generation = rv, gen
	return d
}

func TestOwned_filters_changes_but_never_a_moved_controller_reference(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := metadatafake.NewSimpleMetadataClient(metadataScheme(), owning("a", "1", 1))
		var inputs seen
		var queued keys
		o, err := informer.NewOwned(client, deployments, memcached, informer.Config{
			Notify: queued.add, Logger: logr.Discard(),
			Filters: []informer.Filter{inputs.filter(), generationChanged},
		})
		require.NoError(t, err)
		run(t, o.Informer())
		a := ports.Key{Namespace: "ns", Name: "a"}
		require.Equal(t, []ports.Key{a}, queued.take(t))

		// The Deployment controller's write of its status: skipped.
		status := owning("a", "2", 1)
		status.Labels = map[string]string{"app": "memcached"}
		require.NoError(t, client.Tracker().Update(deployments, status, "ns"))
		synctest.Wait()
		require.Empty(t, queued.take(t), "a status-only change is skipped")
		_, new := inputs.last(t)
		require.Equal(t, map[string]string{"app": "memcached"}, new.GetLabels(), "with filters, the cache keeps the metadata they read")
		require.Nil(t, new.GetManagedFields(), "but no managedFields")

		// A change of spec queues its owner.
		require.NoError(t, client.Tracker().Update(deployments, owning("a", "3", 2), "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{a}, queued.take(t))

		// A moved controller reference is a deletion for one owner and an
		// addition for the other, which no filter sees.
		require.NoError(t, client.Tracker().Update(deployments, owning("z", "4", 2), "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{a, {Namespace: "ns", Name: "z"}}, queued.take(t), "both owners, with the generation unchanged")

		require.NoError(t, client.Tracker().Delete(deployments, "ns", "d"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "z"}}, queued.take(t), "a deletion is never filtered")
	})
}

func TestRelated_filters_changes_of_the_cached_JSON_s_metadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := portsmock.NewMockRecorder(gomock.NewController(t))
		flags := configMap("ns", "flags", map[string]string{"tier": "cache"}, map[string]any{"a": "1"})
		client := relatedClient(memcachedNaming("ns", "m", "flags"), flags)
		labelsChanged := informer.Filter{Name: "labels", Keep: func(old, new metav1.Object) bool {
			return old.GetLabels()["tier"] != new.GetLabels()["tier"]
		}}
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: client, Resource: memcacheds, Owner: memcached,
			Related:  []informer.RelatedConfig{{Resource: configMaps, Index: "configMap", Filters: []informer.Filter{labelsChanged}}},
			Indexes:  []informer.Index{{Name: "configMap", Keys: byConfigMap}},
			Recorder: rec, Logger: logr.Discard(),
		})
		require.NoError(t, err)
		var queued keys
		startWatch(t, w, &queued)
		queued.take(t)

		data := flags.DeepCopy()
		data.SetResourceVersion("2")
		data.Object["data"] = map[string]any{"a": "2"}
		require.NoError(t, client.Tracker().Update(configMaps, data, "ns"))
		synctest.Wait()
		require.Empty(t, queued.take(t), "a change of data alone is skipped")
		doc, _, err := w.Related()[0].Get(ports.Key{Namespace: "ns", Name: "flags"})
		require.NoError(t, err)
		require.JSONEq(t, `{"a":"2"}`, string(dataOf(t, doc)), "and cached all the same")

		relabelled := data.DeepCopy()
		relabelled.SetResourceVersion("3")
		relabelled.SetLabels(map[string]string{"tier": "web"})
		require.NoError(t, client.Tracker().Update(configMaps, relabelled, "ns"))
		synctest.Wait()
		require.Equal(t, []ports.Key{{Namespace: "ns", Name: "m"}}, queued.take(t))
	})
}

// restrictions returns the label and field selectors of client's lists and
// watches of gvr, by verb.
func restrictions(actions []k8stesting.Action, resource string) map[string][]string {
	out := map[string][]string{}
	for _, a := range actions {
		if a.GetResource().Resource != resource {
			continue
		}
		switch a := a.(type) {
		case k8stesting.ListAction:
			r := a.GetListRestrictions()
			out["list"] = append(out["list"], r.Labels.String()+" "+r.Fields.String())
		case k8stesting.WatchAction:
			r := a.GetWatchRestrictions()
			out["watch"] = append(out["watch"], r.Labels.String()+" "+r.Fields.String())
		}
	}
	return out
}

func TestWatch_lists_and_watches_the_primary_and_owned_resources_with_their_selectors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{memcacheds: "MemcachedList"})
		meta := metadatafake.NewSimpleMetadataClient(metadataScheme())
		w, err := informer.NewWatch(informer.WatchConfig{
			Dynamic: client, Metadata: meta, Resource: memcacheds, Owner: memcached,
			LabelSelector: "app=memcached", FieldSelector: "metadata.name!=skip",
			Owns:   []informer.OwnedConfig{{Resource: deployments, LabelSelector: "tier=cache", FieldSelector: "metadata.namespace=ns"}},
			Logger: logr.Discard(),
		})
		require.NoError(t, err)
		require.NoError(t, w.Check(t.Context()))
		var queued keys
		startWatch(t, w, &queued)

		primary := "app=memcached metadata.name!=skip"
		require.Equal(t, map[string][]string{"list": {primary, primary}, "watch": {primary}}, restrictions(client.Actions(), "memcacheds"),
			"Check's list, then the informer's list and watch")
		owned := "tier=cache metadata.namespace=ns"
		require.Equal(t, map[string][]string{"list": {owned, owned}, "watch": {owned}}, restrictions(meta.Actions(), "deployments"))
	})
}
