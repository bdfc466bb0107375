package memcached

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/kube/conversiontest"
)

// statusOf is a status of ready pods, Available with reason, as the
// Reconciler reports it.
func statusOf(ready int32, condStatus metav1.ConditionStatus, reason string) MemcachedStatus {
	return MemcachedStatus{ReadyReplicas: ready, Conditions: []metav1.Condition{{
		Type: "Available", Status: condStatus, Reason: reason, Message: "Deployment has minimum availability.",
		ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(time.Date(2026, time.December, 3, 12, 0, 0, 0, time.UTC)),
	}}}
}

// Every v1alpha1 Memcached comes back whole from v1beta1, and every v1beta1
// one from v1alpha1: size is replicas, and the rest is the same field.
func TestConversion_v1alpha1_and_v1beta1_round_trip_whole(t *testing.T) {
	meta := metav1.ObjectMeta{
		Name: "cache", Namespace: "default", Generation: 2,
		Labels: map[string]string{"app": "memcached"}, Annotations: map[string]string{ScenarioAnnotation: "acme.fault={}"},
	}
	alphas := []struct {
		name string
		spec MemcachedSpec
		st   MemcachedStatus
	}{
		{name: "the defaults", spec: MemcachedSpec{Size: 1, Image: DefaultImage}},
		{name: "flags of a ConfigMap and a status", spec: MemcachedSpec{Size: 3, Image: "memcached:1.6", ConfigMap: "flags"}, st: statusOf(3, metav1.ConditionTrue, "MinimumReplicasAvailable")},
		{name: "no image", spec: MemcachedSpec{Size: 2}, st: statusOf(0, metav1.ConditionUnknown, "ApplyFailed")},
	}
	for _, tt := range alphas {
		t.Run("v1alpha1 "+tt.name, func(t *testing.T) {
			conversiontest.RoundTrip(t, MemcachedV1beta1, Memcached, Object{ObjectMeta: meta, Spec: tt.spec, Status: tt.st})
		})
	}
	betas := []struct {
		name string
		spec ReplicasSpec
		st   MemcachedStatus
	}{
		{name: "the defaults", spec: ReplicasSpec{Replicas: 1, Image: DefaultImage}},
		{name: "an image of another registry", spec: ReplicasSpec{Replicas: 2, Image: "registry.example.com/cache/memcached:1.6", ConfigMap: "flags"}, st: statusOf(2, metav1.ConditionTrue, "MinimumReplicasAvailable")},
		{name: "no image yet", spec: ReplicasSpec{Replicas: 3}},
	}
	for _, tt := range betas {
		t.Run("v1beta1 "+tt.name, func(t *testing.T) {
			conversiontest.RoundTripHub(t, MemcachedV1beta1, ObjectV1beta1{ObjectMeta: meta, Spec: tt.spec, Status: tt.st})
		})
	}
}

// FuzzConversion round-trips Memcacheds of any spec and status, in both
// versions, through the conversions the operator's webhook serves.
func FuzzConversion(f *testing.F) {
	f.Add(int32(3), DefaultImage, "flags", int32(2), "Available", "True", "app", "memcached")
	f.Add(int32(0), "", "", int32(-1), "", "", "", "")
	f.Fuzz(func(t *testing.T, size int32, image, configMap string, ready int32, condType, condStatus, key, value string) {
		st := MemcachedStatus{ReadyReplicas: ready}
		if condType != "" {
			st.Conditions = []metav1.Condition{{Type: condType, Status: metav1.ConditionStatus(condStatus)}}
		}
		meta := metav1.ObjectMeta{Name: "cache", Namespace: "default"}
		if key != "" {
			meta.Labels = map[string]string{key: value}
		}
		conversiontest.RoundTrip(t, MemcachedV1beta1, Memcached, Object{ObjectMeta: meta, Spec: MemcachedSpec{Size: size, Image: image, ConfigMap: configMap}, Status: st})
		conversiontest.RoundTripHub(t, MemcachedV1beta1, ObjectV1beta1{ObjectMeta: meta, Spec: ReplicasSpec{Replicas: size, Image: image, ConfigMap: configMap}, Status: st})
	})
}

// A round trip through the conversion webhook keeps an explicit zero, an
// empty list and an absent field apart, as the API server sent them: the
// webhook decodes and encodes the types, whose tags decide. Where a
// zero and absence are one by the API's definition, want says so.
func TestConversion_round_trips_keep_zeros_empty_and_absent_fields(t *testing.T) {
	const condition = `{"type":"Available","status":"False","reason":"ApplyFailed","message":"","lastTransitionTime":"2026-12-03T12:00:00Z"`
	tests := []struct {
		name string
		// status is the object's status as JSON; "" for none at all.
		status string
		// want is the status that comes back, when it differs from
		// status, and why reads the same by the API's definition.
		want, why string
	}{
		{name: "readyReplicas 0", status: `{"readyReplicas":0}`},
		{name: "readyReplicas 2", status: `{"readyReplicas":2}`},
		{name: "conditions []", status: `{"readyReplicas":0,"conditions":[]}`},
		{name: "a condition", status: `{"readyReplicas":1,"conditions":[` + condition + `,"observedGeneration":3}]}`},
		{name: "a condition's empty message", status: `{"readyReplicas":0,"conditions":[` + condition + `}]}`},
		{name: "conditions absent", status: `{"readyReplicas":0}`},
		{name: "readyReplicas absent", status: `{"conditions":[]}`, want: `{"readyReplicas":0,"conditions":[]}`,
			why: "the schema defaults readyReplicas to 0: the API server fills an absent one on every write and every read from etcd"},
		{name: "a condition's observedGeneration 0", status: `{"readyReplicas":0,"conditions":[` + condition + `,"observedGeneration":0}]}`,
			want: `{"readyReplicas":0,"conditions":[` + condition + `}]}`,
			why:  "metav1.Condition's observedGeneration is optional and omitted at 0 by the API's own type: a generation starts at 1, so 0 is none"},
		{name: "status {}", status: `{}`, want: `{"readyReplicas":0}`,
			why: "as readyReplicas absent"},
		{name: "no status", status: "", want: `{"readyReplicas":0}`,
			why: "kube.Object's Status is a struct, which encoding/json never omits (it came back {} before); the API server ignores a status the main resource is written with, and its default makes {} this"},
	}
	for _, tt := range tests {
		for _, from := range []string{"v1alpha1", "v1beta1"} {
			t.Run(from+" "+tt.name, func(t *testing.T) {
				spec := `{"size":1,"image":"` + DefaultImage + `"}`
				if from == "v1beta1" {
					spec = `{"replicas":1,"image":"` + DefaultImage + `"}`
				}
				object := func(status string) string {
					o := `{"apiVersion":"cache.example.com/` + from + `","kind":"Memcached","metadata":{"name":"cache","namespace":"default"},"spec":` + spec
					if status != "" {
						o += `,"status":` + status
					}
					return o + "}"
				}
				via := "cache.example.com/v1beta1"
				if from == "v1beta1" {
					via = "cache.example.com/v1alpha1"
				}
				there, err := MemcachedV1beta1.Convert(t.Context(), []byte(object(tt.status)), via)
				require.NoError(t, err)
				back, err := MemcachedV1beta1.Convert(t.Context(), there, "cache.example.com/"+from)
				require.NoError(t, err)
				want := tt.status
				if tt.want != "" {
					want = tt.want
				}
				require.JSONEq(t, object(want), string(back), "via %s: %s", there, tt.why)
			})
		}
	}
}
