// Package conversiontest checks the conversions of a custom resource with
// more than one version: that an object converted from its version to the
// hub and back, or from the hub to each other version and back, comes
// back whole (issue #21). It converts through kube.Resource.Convert, the
// code the conversion webhook runs, so what it passes is what the API
// server gets.
//
// Its functions take a testing.TB, so they serve plain tests and the end
// user's fuzz tests alike:
//
//	func FuzzMemcachedConversion(f *testing.F) {
//		f.Add(int32(3), "memcached:1.6")
//		f.Fuzz(func(t *testing.T, size int32, image string) {
//			obj := kube.Object[MemcachedSpec, MemcachedStatus]{Spec: MemcachedSpec{Size: size, Image: image}}
//			conversiontest.RoundTrip(t, MemcachedV1beta1, Memcached, obj)
//		})
//	}
//
// A field lost on the way is reported as the RFC 6902 JSON Patch that
// turns the object as it was into the object that came back: a remove is
// a field the conversion dropped, a replace one it changed, an add one it
// made up.
package conversiontest

import (
	"encoding/json"
	"testing"

	"github.com/loam-dev/loam/domain/jsonpatch"
	"github.com/loam-dev/loam/kube"
)

// RoundTrip converts obj, an object of spoke, one of hub's versions, up to
// hub and back down to spoke, and fails t when what comes back differs
// from obj, printing the difference. obj's apiVersion and kind are set
// from spoke; obj's own, when set, must be spoke's. It stops t with
// Fatal when hub's versions don't check, as its CRD would report, when
// spoke is not one of them, and when a conversion fails.
func RoundTrip[S, St, HS, HSt any](t testing.TB, hub kube.Resource[HS, HSt], spoke kube.Resource[S, St], obj kube.Object[S, St]) {
	t.Helper()
	apiVersion := spoke.Group + "/" + spoke.Version
	typed(t, &obj.APIVersion, &obj.Kind, apiVersion, spoke.Kind)
	roundTrip(t, hub, encode(t, obj), apiVersion, hub.Group+"/"+hub.Version)
}

// RoundTripHub converts obj, an object of hub, down to each of hub's
// other versions and back up, and fails t for each version whose
// conversion changed it, printing the difference: every version is
// tried, so one run names every lossy one. obj's apiVersion and kind are
// set from hub; obj's own, when set, must be hub's. It stops t with
// Fatal when hub's versions don't check, as its CRD would report, and
// when a conversion fails.
func RoundTripHub[HS, HSt any](t testing.TB, hub kube.Resource[HS, HSt], obj kube.Object[HS, HSt]) {
	t.Helper()
	apiVersion := hub.Group + "/" + hub.Version
	typed(t, &obj.APIVersion, &obj.Kind, apiVersion, hub.Kind)
	before := encode(t, obj)
	crd, err := hub.CRD()
	if err != nil {
		t.Fatalf("conversiontest: the hub %s %s: %v", apiVersion, hub.Kind, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == hub.Version {
			continue
		}
		roundTrip(t, hub, before, apiVersion, hub.Group+"/"+v.Name)
	}
}

// typed sets an object's apiVersion and kind to want's, and stops t when
// the object already had others: an object of another version passed
// for this one is the caller's mistake, not a conversion's.
func typed(t testing.TB, apiVersion, kind *string, wantAPIVersion, wantKind string) {
	t.Helper()
	if (*apiVersion != "" && *apiVersion != wantAPIVersion) || (*kind != "" && *kind != wantKind) {
		t.Fatalf("conversiontest: the object's apiVersion and kind are %q and %q, not its Resource's %q and %q: leave them empty, or set them to its Resource's", *apiVersion, *kind, wantAPIVersion, wantKind)
	}
	*apiVersion, *kind = wantAPIVersion, wantKind
}

// encode returns obj as the JSON the API server would send.
func encode(t testing.TB, obj any) []byte {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("conversiontest: encoding the object: %v", err)
	}
	return b
}

// roundTrip converts obj, of apiVersion, to via and back with hub's
// conversions, and fails t, printing the difference, when what comes back
// is not obj. It stops t when a conversion fails.
func roundTrip[HS, HSt any](t testing.TB, hub kube.Resource[HS, HSt], obj []byte, apiVersion, via string) {
	t.Helper()
	there, err := hub.Convert(t.Context(), obj, via)
	if err != nil {
		t.Fatalf("conversiontest: converting the %s %s to %s: %v\nthe object: %s", apiVersion, hub.Kind, via, err, obj)
	}
	back, err := hub.Convert(t.Context(), there, apiVersion)
	if err != nil {
		t.Fatalf("conversiontest: converting the %s %s back from %s: %v\nthe object in %s: %s", apiVersion, hub.Kind, via, err, via, there)
	}
	patch, err := jsonpatch.Diff(obj, back)
	if err != nil {
		t.Fatalf("conversiontest: comparing the %s %s before and after: %v", apiVersion, hub.Kind, err)
	}
	if string(patch) != "[]" {
		t.Errorf("conversiontest: the %s %s came back from %s changed: the JSON Patch from it as it was to it as it came back is %s\nas it was:       %s\nas it came back: %s",
			apiVersion, hub.Kind, via, patch, obj, back)
	}
}
