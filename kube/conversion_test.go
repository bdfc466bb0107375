package kube_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube"
)

const (
	alphaJSON = `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"web","namespace":"shop","labels":{"app":"web"},"uid":"u-1","resourceVersion":"7"},"spec":{"size":2,"image":"memcached:1.6"},"status":{"readyReplicas":1}}`
	v1JSON    = `{"apiVersion":"cache.example.com/v1","kind":"Memcached","metadata":{"name":"web","namespace":"shop","labels":{"app":"web"},"uid":"u-1","resourceVersion":"7"},"spec":{"replicas":2,"image":"memcached:1.6"},"status":{"readyReplicas":1}}`
	betaJSON  = `{"apiVersion":"cache.example.com/v1beta1","kind":"Memcached","metadata":{"labels":{"app":"web"},"name":"web","namespace":"shop","resourceVersion":"7","uid":"u-1"},"spec":{"image":"memcached:1.6","replicas":2},"status":{"readyReplicas":1}}`
)

func TestConvert_converts_between_any_two_versions_through_the_hub(t *testing.T) {
	for _, tc := range []struct {
		name, obj, to, want string
	}{
		{"a Spoke up to the hub", alphaJSON, "cache.example.com/v1", v1JSON},
		{"the hub down to a Spoke", v1JSON, "cache.example.com/v1alpha1", alphaJSON},
		{"the hub to an Unconverted", v1JSON, "cache.example.com/v1beta1", betaJSON},
		{"an Unconverted to the hub", betaJSON, "cache.example.com/v1", v1JSON},
		{"a Spoke to an Unconverted", alphaJSON, "cache.example.com/v1beta1", betaJSON},
		{"an Unconverted to a Spoke", betaJSON, "cache.example.com/v1alpha1", alphaJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MemcachedV1.Convert(t.Context(), []byte(tc.obj), tc.to)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestConvert_returns_an_object_of_the_version_asked_for_unchanged(t *testing.T) {
	for _, obj := range []string{alphaJSON, v1JSON, betaJSON} {
		var h struct {
			APIVersion string `json:"apiVersion"`
		}
		require.NoError(t, json.Unmarshal([]byte(obj), &h))
		got, err := MemcachedV1.Convert(t.Context(), []byte(obj), h.APIVersion)
		require.NoError(t, err)
		require.Equal(t, obj, string(got))
	}
}

func TestConvert_fails_naming_the_object_and_what_is_wrong(t *testing.T) {
	for _, tc := range []struct {
		name, obj, to string
		want          []string
	}{
		{"not JSON", `{"apiVersion":`, "cache.example.com/v1", []string{"kube: converting a Memcached: the object is not a JSON object"}},
		{"a JSON array", `[]`, "cache.example.com/v1", []string{"kube: converting a Memcached: the object is not a JSON object"}},
		{"null", `null`, "cache.example.com/v1", []string{`its kind "" is not "Memcached"`, `its apiVersion "" is not of the group cache.example.com`}},
		{"another kind", `{"apiVersion":"cache.example.com/v1","kind":"Cache","metadata":{"name":"web"}}`, "cache.example.com/v1alpha1",
			[]string{`kube: converting the Memcached "web" from "cache.example.com/v1" to "cache.example.com/v1alpha1": its kind "Cache" is not "Memcached"`}},
		{"another group", `{"apiVersion":"apps/v1","kind":"Memcached","metadata":{"name":"web","namespace":"shop"}}`, "cache.example.com/v1",
			[]string{`the Memcached "shop/web"`, `its apiVersion "apps/v1" is not of the group cache.example.com`}},
		{"an unknown version", alphaJSON, "cache.example.com/v2", []string{`the apiVersion asked for "cache.example.com/v2" is not a version of the Memcached`}},
		{"a malformed apiVersion", alphaJSON, "a/b/c", []string{`the apiVersion asked for "a/b/c"`}},
		{"a malformed spec", `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"web","namespace":"shop"},"spec":{"size":"two"}}`, "cache.example.com/v1",
			[]string{`kube: converting the Memcached "shop/web" from "cache.example.com/v1alpha1" to "cache.example.com/v1": decoding it as kube.Object[`, "size"}},
		{"a malformed Unconverted", `{"apiVersion":"cache.example.com/v1beta1","kind":"Memcached","metadata":{"name":"web"}, "spec": }`, "cache.example.com/v1",
			[]string{"kube: converting a Memcached: the object is not a JSON object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MemcachedV1.Convert(t.Context(), []byte(tc.obj), tc.to)
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// withAlpha returns MemcachedV1 with v1alpha1 converted by up and down.
func withAlpha(
	up func(kube.Object[MemcachedSpec, MemcachedStatus], *kube.Object[MemcachedV1Spec, MemcachedStatus]) error,
	down func(kube.Object[MemcachedV1Spec, MemcachedStatus], *kube.Object[MemcachedSpec, MemcachedStatus]) error,
) kube.Resource[MemcachedV1Spec, MemcachedStatus] {
	return versionsOf(convertHook, kube.Spoke(Memcached, up, down))
}

func TestConvert_lets_a_conversion_change_labels_and_annotations_only(t *testing.T) {
	relabel := func(from kube.Object[MemcachedSpec, MemcachedStatus], to *kube.Object[MemcachedV1Spec, MemcachedStatus]) error {
		require.NoError(t, memcachedToV1(from, to))
		to.Labels["converted"] = "yes"
		to.Annotations = map[string]string{"from": from.APIVersion}
		return nil
	}
	got, err := withAlpha(relabel, memcachedFromV1).Convert(t.Context(), []byte(alphaJSON), "cache.example.com/v1")
	require.NoError(t, err)
	var obj kube.Object[MemcachedV1Spec, MemcachedStatus]
	require.NoError(t, json.Unmarshal(got, &obj))
	require.Equal(t, map[string]string{"app": "web", "converted": "yes"}, obj.Labels)
	require.Equal(t, map[string]string{"from": "cache.example.com/v1alpha1"}, obj.Annotations)

	for _, tc := range []struct {
		name   string
		change func(*kube.Object[MemcachedV1Spec, MemcachedStatus])
		want   []string
	}{
		{"the uid", func(o *kube.Object[MemcachedV1Spec, MemcachedStatus]) { o.UID = "u-2" }, []string{"the conversion changed metadata.uid"}},
		{"the name and finalizers", func(o *kube.Object[MemcachedV1Spec, MemcachedStatus]) {
			o.Name = "other"
			o.Finalizers = []string{"x"}
		}, []string{"metadata.name", "metadata.finalizers"}},
		{"the apiVersion and kind", func(o *kube.Object[MemcachedV1Spec, MemcachedStatus]) {
			o.APIVersion, o.Kind = "cache.example.com/v1alpha1", "Cache"
		}, []string{`the conversion changed apiVersion from "cache.example.com/v1" to "cache.example.com/v1alpha1"`, `the conversion changed kind from "Memcached" to "Cache"`}},
		{"the creation time", func(o *kube.Object[MemcachedV1Spec, MemcachedStatus]) { o.CreationTimestamp = metav1.Unix(1, 0) }, []string{"metadata.creationTimestamp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := func(from kube.Object[MemcachedSpec, MemcachedStatus], to *kube.Object[MemcachedV1Spec, MemcachedStatus]) error {
				require.NoError(t, memcachedToV1(from, to))
				tc.change(to)
				return nil
			}
			_, err := withAlpha(up, memcachedFromV1).Convert(t.Context(), []byte(alphaJSON), "cache.example.com/v1")
			require.ErrorContains(t, err, `kube: converting the Memcached "shop/web" from "cache.example.com/v1alpha1" to "cache.example.com/v1": `)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestConvert_fails_with_the_conversions_error(t *testing.T) {
	refuse := errors.New("size 0 has no replicas")
	down := func(kube.Object[MemcachedV1Spec, MemcachedStatus], *kube.Object[MemcachedSpec, MemcachedStatus]) error {
		return refuse
	}
	_, err := withAlpha(memcachedToV1, down).Convert(t.Context(), []byte(v1JSON), "cache.example.com/v1alpha1")
	require.ErrorIs(t, err, refuse)
	require.ErrorContains(t, err, `the Memcached "shop/web" from "cache.example.com/v1" to "cache.example.com/v1alpha1": size 0 has no replicas`)
}

func TestConvert_returns_the_resources_mistakes(t *testing.T) {
	_, err := versionsOf(nil, kube.Spoke(Memcached, nil, memcachedFromV1)).Convert(t.Context(), []byte(alphaJSON), "cache.example.com/v1")
	require.ErrorContains(t, err, "kube: the CRD of Memcached: ")
	require.ErrorContains(t, err, "missing conversion")
}

func TestConvert_stops_when_the_context_ends(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("the review timed out")
	cancel(cause)
	_, err := MemcachedV1.Convert(ctx, []byte(alphaJSON), "cache.example.com/v1")
	require.ErrorIs(t, err, cause)
}

// FuzzConvert converts any bytes to any version: Convert never panics, and
// what it returns is a JSON object of the version asked for.
func FuzzConvert(f *testing.F) {
	for _, obj := range []string{alphaJSON, v1JSON, betaJSON, `{}`, `null`, `[]`, `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":null,"spec":null}`, `{"kind":"Memcached","apiVersion":"cache.example.com/v1beta1","metadata":{"name":1}}`} {
		for _, to := range []string{"cache.example.com/v1", "cache.example.com/v1alpha1", "cache.example.com/v1beta1", "v1", ""} {
			f.Add([]byte(obj), to)
		}
	}
	f.Fuzz(func(t *testing.T, obj []byte, to string) {
		got, err := MemcachedV1.Convert(context.Background(), obj, to)
		if err != nil {
			return
		}
		var h struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(got, &h); err != nil {
			t.Fatalf("Convert returned %q, not a JSON object: %v", got, err)
		}
		if h.APIVersion != to || h.Kind != "Memcached" {
			t.Fatalf("Convert to %q returned an object of %q, kind %q: %s", to, h.APIVersion, h.Kind, got)
		}
	})
}
