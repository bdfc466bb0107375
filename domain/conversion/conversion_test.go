package conversion_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/conversion"
)

// tagging returns a Func that records each call in calls, as "name>apiVersion",
// and returns obj with its apiVersion set to to's.
func tagging(calls *[]string, name string) conversion.Func {
	return func(obj []byte, to metav1.TypeMeta) ([]byte, error) {
		*calls = append(*calls, name+">"+to.APIVersion)
		return conversion.SetAPIVersion(obj, to)
	}
}

// hub has the hub version v1 and the spokes v1alpha1 and v1beta1.
func hub(calls *[]string) conversion.Hub {
	return conversion.Hub{Group: "cache.example.com", Kind: "Memcached", Version: "v1", Spokes: map[string]conversion.Spoke{
		"v1alpha1": {ToHub: tagging(calls, "alpha.up"), FromHub: tagging(calls, "alpha.down")},
		"v1beta1":  {ToHub: tagging(calls, "beta.up"), FromHub: tagging(calls, "beta.down")},
	}}
}

func object(apiVersion string) []byte {
	return []byte(`{"apiVersion":"` + apiVersion + `","kind":"Memcached","metadata":{"name":"web","namespace":"shop"},"spec":{"size":1}}`)
}

func TestHub_Convert_routes_through_the_hub(t *testing.T) {
	for _, c := range []struct {
		name, from, to string
		calls          []string
	}{
		{"spoke to hub", "v1alpha1", "v1", []string{"alpha.up>cache.example.com/v1"}},
		{"hub to spoke", "v1", "v1beta1", []string{"beta.down>cache.example.com/v1beta1"}},
		{"spoke to spoke", "v1alpha1", "v1beta1", []string{"alpha.up>cache.example.com/v1", "beta.down>cache.example.com/v1beta1"}},
		{"the same spoke", "v1beta1", "v1beta1", nil},
		{"the hub itself", "v1", "v1", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []string
			in := object("cache.example.com/" + c.from)
			out, err := hub(&calls).Convert(context.Background(), in, "cache.example.com/"+c.to)
			require.NoError(t, err)
			require.Equal(t, c.calls, calls)
			require.JSONEq(t, string(object("cache.example.com/"+c.to)), string(out))
			if c.from == c.to {
				require.Equal(t, in, out, "an object of the version asked for is returned as it is")
			}
		})
	}
}

func TestHub_Convert_fails_naming_the_object_and_every_reason(t *testing.T) {
	for _, c := range []struct {
		name, obj, to string
		want          []string
	}{
		{"not JSON", `{"apiVersion":`, "cache.example.com/v1", []string{"converting a Memcached: the object is not a JSON object"}},
		{"another kind, group and version", `{"apiVersion":"other.example.com/v1","kind":"Cache","metadata":{"name":"web"}}`, "cache.example.com/v9",
			[]string{
				`converting the Memcached "web" from "other.example.com/v1" to "cache.example.com/v9": `,
				`its kind "Cache" is not "Memcached"`,
				`its apiVersion "other.example.com/v1" is not of the group cache.example.com`,
				`the apiVersion asked for "cache.example.com/v9" is not a version of the Memcached`,
			}},
		{"a malformed apiVersion", string(object("a/b/c")), "cache.example.com/v1", []string{`its apiVersion "a/b/c": `}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []string
			out, err := hub(&calls).Convert(context.Background(), []byte(c.obj), c.to)
			require.Nil(t, out)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
			require.Empty(t, calls)
		})
	}
}

func TestHub_Convert_fails_with_a_spokes_error(t *testing.T) {
	boom := errors.New("boom")
	failing := func([]byte, metav1.TypeMeta) ([]byte, error) { return nil, boom }
	var calls []string
	h := hub(&calls)
	h.Spokes["v1alpha1"] = conversion.Spoke{ToHub: failing, FromHub: failing}
	for _, to := range []string{"v1", "v1beta1"} {
		_, err := h.Convert(context.Background(), object("cache.example.com/v1alpha1"), "cache.example.com/"+to)
		require.ErrorIs(t, err, boom)
		require.ErrorContains(t, err, `converting the Memcached "shop/web" from "cache.example.com/v1alpha1"`)
	}
	_, err := h.Convert(context.Background(), object("cache.example.com/v1"), "cache.example.com/v1alpha1")
	require.ErrorIs(t, err, boom)
	require.Empty(t, calls)
}

func TestHub_Convert_stops_when_the_context_ends(t *testing.T) {
	cause := errors.New("the review's timeout passed")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	var calls []string
	_, err := hub(&calls).Convert(ctx, object("cache.example.com/v1alpha1"), "cache.example.com/v1")
	require.ErrorIs(t, err, cause)
	require.ErrorContains(t, err, "converting a Memcached: ")
	require.Empty(t, calls)
}

func TestSetAPIVersion_changes_the_apiVersion_alone(t *testing.T) {
	out, err := conversion.SetAPIVersion([]byte(`{"apiVersion":"g/v1","kind":"K","spec":{"n":1.50}}`), metav1.TypeMeta{APIVersion: "g/v2", Kind: "ignored"})
	require.NoError(t, err)
	require.JSONEq(t, `{"apiVersion":"g/v2","kind":"K","spec":{"n":1.50}}`, string(out))
	require.Contains(t, string(out), "1.50")

	for _, bad := range []string{`null`, `[]`, `{`} {
		_, err := conversion.SetAPIVersion([]byte(bad), metav1.TypeMeta{APIVersion: "g/v2"})
		require.Error(t, err, bad)
	}
}

func TestCheck_names_every_change_a_conversion_may_not_make(t *testing.T) {
	to := metav1.TypeMeta{APIVersion: "g/v1", Kind: "K"}
	want := metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u", Labels: map[string]string{"a": "b"}}

	allowed := *want.DeepCopy()
	allowed.Labels = map[string]string{"c": "d"}
	allowed.Annotations = map[string]string{"e": "f"}
	allowed.Finalizers = []string{} // an empty slice is a missing one
	require.NoError(t, conversion.Check(to, to, want, allowed))

	changed := *want.DeepCopy()
	changed.Name, changed.UID = "other", "v"
	err := conversion.Check(to, metav1.TypeMeta{APIVersion: "g/v2", Kind: "L"}, want, changed)
	for _, w := range []string{
		`the conversion changed apiVersion from "g/v1" to "g/v2"`,
		`the conversion changed kind from "K" to "L"`,
		"the conversion changed metadata.name, which the API server refuses",
		"the conversion changed metadata.uid, which the API server refuses",
	} {
		require.ErrorContains(t, err, w)
	}
	require.Equal(t, []string{"name", "uid"}, conversion.MetaChanges(want, changed))
}

// The objects Convert returns are JSON whenever the spokes' are.
func FuzzHub_Convert(f *testing.F) {
	for _, seed := range []string{string(object("cache.example.com/v1alpha1")), `{}`, `[]`, `null`, `{"apiVersion":7}`} {
		f.Add([]byte(seed), "cache.example.com/v1beta1")
	}
	f.Fuzz(func(t *testing.T, obj []byte, apiVersion string) {
		var calls []string
		out, err := hub(&calls).Convert(context.Background(), obj, apiVersion)
		if err != nil {
			require.Nil(t, out)
			return
		}
		require.True(t, json.Valid(out))
	})
}
