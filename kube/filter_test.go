package kube_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/kube"
)

func keepAll(_, _ metav1.Object) bool { return true }

func TestNewController_takes_filters_and_selectors(t *testing.T) {
	s, c := unservedClient(t)
	settings := validSettings()
	settings.LabelSelector = "app.kubernetes.io/managed-by=memcached-operator"
	settings.FieldSelector = "metadata.name!=skip"
	cms := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	_, err := kube.NewController(s, c, settings, Memcached, readingReconciler{ConfigMaps: cms},
		kube.FilterUpdates(kube.SkipStatusOnly(), kube.FilterFunc("mine", keepAll)),
		kube.Owns(deployments, kube.SkipStatusOnly(), kube.Selector{Labels: "app=memcached", Fields: "metadata.name!=x"}),
		kube.Owns(schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}),
		kube.Watches(cms, kube.MapFunc(func(metav1.Object) []kube.Key { return nil }), kube.FilterFunc("labels", keepAll)),
	)
	require.NoError(t, err)
}

func TestNewController_reports_every_filter_and_selector_mistake_together(t *testing.T) {
	s, c := unservedClient(t)
	settings := validSettings()
	settings.LabelSelector = "app in ("
	settings.FieldSelector = "metadata.name"
	cms := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	nilSelector := (*kube.Selector)(nil)
	_, err := kube.NewController(s, c, settings, Memcached, memcachedReconciler{},
		kube.FilterUpdates(),
		kube.FilterUpdates(kube.UpdateFilter{}, kube.FilterFunc("", keepAll), kube.FilterFunc("nil", nil)),
		kube.FilterUpdates(kube.SkipStatusOnly(), kube.SkipStatusOnly()),
		kube.Owns(deployments,
			kube.Selector{Labels: "app in (", Fields: "metadata.name"},
			kube.Selector{},
			nil,
			nilSelector,
			kube.FilterFunc("twice", keepAll),
			kube.FilterFunc("twice", keepAll),
		),
		kube.Watches(cms, kube.MapFunc(func(metav1.Object) []kube.Key { return nil }), kube.UpdateFilter{}),
	)
	require.Error(t, err)
	for _, want := range []string{
		`kube: Settings.LabelSelector: "app in (" is not a label selector`,
		`kube: Settings.FieldSelector: "metadata.name" is not a field selector`,
		"kube: Part 0, FilterUpdates(): no UpdateFilter: pass kube.SkipStatusOnly or a kube.FilterFunc",
		`kube: Part 1, FilterUpdates(UpdateFilter{}, FilterFunc("", ...), FilterFunc("nil", nil)): a Controller takes one FilterUpdates, and this is a second: pass every filter to one`,
		"kube: Part 1, FilterUpdates(UpdateFilter{}, FilterFunc(\"\", ...), FilterFunc(\"nil\", nil)): filter 0, UpdateFilter{}: the zero UpdateFilter: make one with kube.SkipStatusOnly or kube.FilterFunc",
		`filter 1, FilterFunc("", ...): the FilterFunc has no name, which its records would name it by`,
		`filter 2, FilterFunc("nil", nil): the function of FilterFunc("nil") is nil`,
		`kube: Part 2, FilterUpdates(SkipStatusOnly(), SkipStatusOnly()): filter 1, SkipStatusOnly(): filter 0 is named "SkipStatusOnly" too: each of a watch's filters has a name of its own`,
		`kube: Part 3, Owns(apps/v1, Resource=deployments, Selector{Labels: "app in (", Fields: "metadata.name"}, Selector{Labels: "", Fields: ""}, <nil>, <nil>, FilterFunc("twice", ...), FilterFunc("twice", ...)): option 0, Selector.Labels: "app in (" is not a label selector`,
		`option 0, Selector.Fields: "metadata.name" is not a field selector`,
		`option 1, Selector{Labels: "", Fields: ""}: an Owns takes one Selector, and this is a second`,
		"option 2 is nil",
		"option 3 is a *kube.Selector: pass a kube.Selector or a kube.UpdateFilter itself",
		`option 5, FilterFunc("twice", ...): option 4 is named "twice" too`,
		`kube: Part 4, Watches(Cache(/v1, Resource=configmaps), MapFunc(...), UpdateFilter{}): filter 0, UpdateFilter{}: the zero UpdateFilter`,
	} {
		require.ErrorContains(t, err, want)
	}
	require.Len(t, strings.Split(err.Error(), "\n"), 16, "one line for each mistake")
}

func TestPart_String_describes_filters_and_selectors_as_written(t *testing.T) {
	cms := kube.NewCache(ConfigMaps, kube.CacheOptions[corev1.ConfigMap]{})
	for _, c := range []struct {
		part kube.Part
		want string
	}{
		{kube.Owns(deployments), "Owns(apps/v1, Resource=deployments)"},
		{kube.Owns(deployments, kube.Selector{Labels: "a=b"}, kube.SkipStatusOnly()),
			`Owns(apps/v1, Resource=deployments, Selector{Labels: "a=b", Fields: ""}, SkipStatusOnly())`},
		{kube.FilterUpdates(kube.SkipStatusOnly(), kube.FilterFunc("mine", keepAll)), `FilterUpdates(SkipStatusOnly(), FilterFunc("mine", ...))`},
		{kube.Watches(cms, kube.MapFunc(nil)), "Watches(Cache(/v1, Resource=configmaps), MapFunc(...))"},
		{kube.Watches(cms, kube.MapFunc(nil), kube.SkipStatusOnly()), "Watches(Cache(/v1, Resource=configmaps), MapFunc(...), SkipStatusOnly())"},
	} {
		require.Equal(t, c.want, c.part.String())
	}
}
