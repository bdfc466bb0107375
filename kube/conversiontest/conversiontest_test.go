package conversiontest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/conversiontest"
)

// The versions of a Memcached: v1beta1, the hub, renamed v1alpha1's size
// to replicas and added paused, which v1alpha1 keeps in an annotation.
type (
	hubSpec struct {
		Replicas int32  `json:"replicas"`
		Image    string `json:"image"`
		Paused   bool   `json:"paused,omitempty"`
	}
	spokeSpec struct {
		Size  int32  `json:"size"`
		Image string `json:"image"`
	}
	status struct {
		Ready int32 `json:"ready,omitempty"`
	}
	hubObject   = kube.Object[hubSpec, status]
	spokeObject = kube.Object[spokeSpec, status]
)

// pausedAnnotation keeps v1beta1's spec.paused in a v1alpha1 object.
const pausedAnnotation = "cache.example.com/paused"

var spoke = kube.Resource[spokeSpec, status]{
	Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached", Plural: "memcacheds", Scope: kube.Namespaced,
}

// up converts a v1alpha1 Memcached to v1beta1, taking paused back out of
// its annotation, so that the annotation doesn't stay behind.
func up(from spokeObject, to *hubObject) error {
	to.Spec = hubSpec{Replicas: from.Spec.Size, Image: from.Spec.Image}
	to.Status = from.Status
	if v, ok := to.Annotations[pausedAnnotation]; ok {
		paused, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("the annotation %s: %w", pausedAnnotation, err)
		}
		to.Spec.Paused = paused
		delete(to.Annotations, pausedAnnotation)
		if len(to.Annotations) == 0 {
			to.Annotations = nil
		}
	}
	return nil
}

// down converts a v1beta1 Memcached to v1alpha1, keeping paused in an
// annotation, since v1alpha1 has no field for it.
func down(from hubObject, to *spokeObject) error {
	to.Spec = spokeSpec{Size: from.Spec.Replicas, Image: from.Spec.Image}
	to.Status = from.Status
	if from.Spec.Paused {
		if to.Annotations == nil {
			to.Annotations = map[string]string{}
		}
		to.Annotations[pausedAnnotation] = "true"
	}
	return nil
}

// hubOf returns the v1beta1 hub whose v1alpha1 converts with up and down.
func hubOf(up func(spokeObject, *hubObject) error, down func(hubObject, *spokeObject) error) kube.Resource[hubSpec, status] {
	return kube.Resource[hubSpec, status]{
		Group: "cache.example.com", Version: "v1beta1", Kind: "Memcached", Plural: "memcacheds", Scope: kube.Namespaced,
		Versions:   []kube.Version{kube.Spoke(spoke, up, down)},
		Conversion: &kube.WebhookClient{URL: "https://webhooks.example.com"},
	}
}

// recorder is a testing.TB that records what the helpers report instead
// of failing the test, so a test can assert on what they say.
type recorder struct {
	testing.TB
	errors []string
	fatal  string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Fatalf records, and ends the goroutine as testing's does.
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// record runs f with a recorder in a goroutine of its own, which its
// Fatalf may end, and returns the recorder once f has.
func record(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func object(size int32, image string) spokeObject {
	o := spokeObject{Spec: spokeSpec{Size: size, Image: image}, Status: status{Ready: size}}
	o.Name, o.Namespace = "cache", "team-a"
	o.Labels = map[string]string{"app": "memcached"}
	return o
}

func TestRoundTrip_passes_a_conversion_that_keeps_every_field(t *testing.T) {
	hub := hubOf(up, down)
	paused := object(3, "memcached:1.6")
	paused.Annotations = map[string]string{pausedAnnotation: "true", "team": "a"}

	r := record(t, func(t testing.TB) {
		conversiontest.RoundTrip(t, hub, spoke, object(3, "memcached:1.6"))
		conversiontest.RoundTrip(t, hub, spoke, paused)
		h := hubObject{Spec: hubSpec{Replicas: 2, Image: "memcached:1.6", Paused: true}}
		h.Name = "cache"
		conversiontest.RoundTripHub(t, hub, h)
	})
	require.Empty(t, r.fatal)
	require.Empty(t, r.errors)
}

func TestRoundTrip_prints_what_a_conversion_lost_as_a_JSON_Patch(t *testing.T) {
	// up forgets the image: v1alpha1's comes back empty.
	forgetful := hubOf(func(from spokeObject, to *hubObject) error {
		to.Spec.Replicas = from.Spec.Size
		to.Status = from.Status
		return nil
	}, down)
	r := record(t, func(t testing.TB) { conversiontest.RoundTrip(t, forgetful, spoke, object(3, "memcached:1.6")) })
	require.Empty(t, r.fatal)
	require.Len(t, r.errors, 1)
	require.Contains(t, r.errors[0], "the cache.example.com/v1alpha1 Memcached came back from cache.example.com/v1beta1 changed")
	require.Contains(t, r.errors[0], `[{"op":"replace","path":"/spec/image","value":""}]`)
}

func TestRoundTripHub_names_every_version_that_loses_a_field(t *testing.T) {
	// down has nowhere to keep paused, and drops it.
	lossy := func(from hubObject, to *spokeObject) error {
		to.Spec = spokeSpec{Size: from.Spec.Replicas, Image: from.Spec.Image}
		to.Status = from.Status
		return nil
	}
	hub := hubOf(up, lossy)
	v1alpha2 := spoke
	v1alpha2.Version = "v1alpha2"
	hub.Versions = append(hub.Versions, kube.Spoke(v1alpha2, up, lossy))
	h := hubObject{Spec: hubSpec{Replicas: 2, Image: "memcached:1.6", Paused: true}}
	h.Name = "cache"

	r := record(t, func(t testing.TB) { conversiontest.RoundTripHub(t, hub, h) })
	require.Empty(t, r.fatal)
	require.Len(t, r.errors, 2, "each lossy version is named")
	for i, v := range []string{"v1alpha1", "v1alpha2"} {
		require.Contains(t, r.errors[i], "the cache.example.com/v1beta1 Memcached came back from cache.example.com/"+v+" changed")
		require.Contains(t, r.errors[i], `[{"op":"remove","path":"/spec/paused"}]`)
	}
}

func TestRoundTrip_stops_on_a_mistake(t *testing.T) {
	other := spoke
	other.Version = "v2"
	wrongType := object(1, "memcached:1.6")
	wrongType.APIVersion = "cache.example.com/v1beta1"
	failing := hubOf(func(spokeObject, *hubObject) error { return errors.New("no replicas today") }, down)
	noConversion := hubOf(up, down)
	noConversion.Conversion = nil

	for _, c := range []struct {
		name  string
		check func(testing.TB)
		want  string
	}{
		{"a version that isn't the hub's", func(t testing.TB) { conversiontest.RoundTrip(t, hubOf(up, down), other, object(1, "memcached:1.6")) },
			`"cache.example.com/v2" is not a version of the Memcached`},
		{"an object of another version", func(t testing.TB) { conversiontest.RoundTrip(t, hubOf(up, down), spoke, wrongType) },
			`the object's apiVersion and kind are "cache.example.com/v1beta1" and "", not its Resource's "cache.example.com/v1alpha1" and "Memcached"`},
		{"a conversion that fails", func(t testing.TB) { conversiontest.RoundTrip(t, failing, spoke, object(1, "memcached:1.6")) },
			"no replicas today"},
		{"a hub whose CRD doesn't check", func(t testing.TB) { conversiontest.RoundTripHub(t, noConversion, hubObject{}) },
			"the conversion webhook is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := record(t, c.check)
			require.Contains(t, r.fatal, c.want)
			require.Empty(t, r.errors)
		})
	}
}

// FuzzRoundTrip is how an end user fuzzes their conversions: any
// v1alpha1 object, and any v1beta1 one, comes back whole.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int32(3), "memcached:1.6", false, "app", "memcached")
	f.Add(int32(0), "", true, pausedAnnotation, "false")
	hub := hubOf(up, down)
	f.Fuzz(func(t *testing.T, size int32, image string, paused bool, key, value string) {
		o := object(size, image)
		if key != pausedAnnotation {
			// The annotation is the conversion's own: a v1alpha1 object
			// an end user annotated so is not one it promises to keep.
			o.Annotations = map[string]string{key: value}
		}
		conversiontest.RoundTrip(t, hub, spoke, o)
		h := hubObject{Spec: hubSpec{Replicas: size, Image: image, Paused: paused}}
		h.Name = "cache"
		conversiontest.RoundTripHub(t, hub, h)
	})
}
