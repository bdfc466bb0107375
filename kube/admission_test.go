package kube

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/loam-dev/loam/domain/jsonpatch"
	"github.com/loam-dev/loam/ports"
)

type admitSpec struct {
	Size  int32  `json:"size"`
	Image string `json:"image,omitempty"`
}

type admitStatus struct {
	Ready int32 `json:"ready,omitempty"`
}

var admitResource = Resource[admitSpec, admitStatus]{
	Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached", Plural: "memcacheds", Scope: Namespaced,
}

type admitObject = Object[admitSpec, admitStatus]

// request returns a review of admitResource's objects.
func request(op Operation, obj, old string) ports.AdmissionRequest {
	r := ports.AdmissionRequest{
		UID: "u1", Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached", Resource: "memcacheds",
		Namespace: "ns", Name: "mc", Operation: string(op), DryRun: true, UserName: "alice", Groups: []string{"devs"},
	}
	if obj != "" {
		r.Object = []byte(obj)
	}
	if old != "" {
		r.OldObject = []byte(old)
	}
	return r
}

func TestValidator_decodes_the_request_into_the_handlers_Admission(t *testing.T) {
	var got Admission[admitObject]
	h := Validate(admitResource, func(_ context.Context, a Admission[admitObject]) ([]string, error) {
		got = a
		return []string{"careful"}, errors.New("too big")
	})
	res, err := h.admitter.Admit(t.Context(), request(Update,
		`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"mc","namespace":"ns"},"spec":{"size":5}}`,
		`{"metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1}}`))
	require.EqualError(t, err, "too big")
	require.Equal(t, []string{"careful"}, res.Warnings)
	require.Nil(t, res.Object)
	require.Equal(t, Update, got.Operation)
	require.Equal(t, int32(5), got.Object.Spec.Size)
	require.Equal(t, "cache.example.com/v1alpha1", got.Object.APIVersion)
	require.Equal(t, int32(1), got.OldObject.Spec.Size)
	require.Equal(t, "ns", got.Namespace)
	require.Equal(t, "mc", got.Name)
	require.True(t, got.DryRun)
	require.Equal(t, "alice", got.UserName)
	require.Equal(t, []string{"devs"}, got.Groups)
}

func TestValidator_denies_what_it_cannot_decode_naming_the_object(t *testing.T) {
	called := false
	h := Validate(admitResource, func(context.Context, Admission[admitObject]) ([]string, error) {
		called = true
		return nil, nil
	})
	for _, c := range []struct {
		name string
		req  ports.AdmissionRequest
		want string
	}{
		{"bad object", request(Create, `{"spec":{"size":"five"}}`, ""), "Memcached ns/mc: object: "},
		{"bad old object", request(Update, `{}`, `[1]`), "Memcached ns/mc: oldObject: "},
		{"another kind", func() ports.AdmissionRequest {
			r := request(Create, `{}`, "")
			r.Version = "v1beta1"
			return r
		}(), "Memcached ns/mc: the review is of Memcached.v1beta1.cache.example.com, and this webhook admits Memcached.v1alpha1.cache.example.com"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.admitter.Admit(t.Context(), c.req)
			require.ErrorContains(t, err, c.want)
			require.False(t, called)
		})
	}
}

func TestMutator_returns_the_request_object_with_the_handlers_changes_only(t *testing.T) {
	h := Mutate(admitResource, func(_ context.Context, a Admission[admitObject], obj *admitObject) ([]string, error) {
		require.Equal(t, a.Object, *obj)
		if obj.Spec.Image == "" {
			obj.Spec.Image = "memcached:1.6"
		}
		obj.Labels = map[string]string{"defaulted": "true"}
		return []string{"defaulted"}, nil
	})
	// unknown and 1.50 are kept as sent: only the handler's changes are
	// applied to the request's own object.
	sent := `{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1,"unknown":1.50}}`
	res, err := h.admitter.Admit(t.Context(), request(Create, sent, ""))
	require.NoError(t, err)
	require.Equal(t, []string{"defaulted"}, res.Warnings)
	patch, err := jsonpatch.Diff([]byte(sent), res.Object)
	require.NoError(t, err)
	require.JSONEq(t, `[
		{"op":"add","path":"/metadata/labels","value":{"defaulted":"true"}},
		{"op":"add","path":"/spec/image","value":"memcached:1.6"}
	]`, string(patch))
}

func TestMutator_returns_no_object_when_nothing_changed_or_the_handler_fails(t *testing.T) {
	sent := `{"metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1,"image":"x"}}`
	unchanged := Mutate(admitResource, func(context.Context, Admission[admitObject], *admitObject) ([]string, error) {
		return nil, nil
	})
	res, err := unchanged.admitter.Admit(t.Context(), request(Create, sent, ""))
	require.NoError(t, err)
	require.Nil(t, res.Object)

	failing := Mutate(admitResource, func(_ context.Context, _ Admission[admitObject], obj *admitObject) ([]string, error) {
		obj.Spec.Size = 9
		return []string{"w"}, errors.New("no")
	})
	res, err = failing.admitter.Admit(t.Context(), request(Create, sent, ""))
	require.EqualError(t, err, "no")
	require.Nil(t, res.Object)
	require.Equal(t, []string{"w"}, res.Warnings)
}

func TestMutateKind_works_on_a_kinds_own_type(t *testing.T) {
	pods := Kind[corev1.Pod]{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Scope: Namespaced}
	h := MutateKind(pods, func(_ context.Context, _ Admission[corev1.Pod], p *corev1.Pod) ([]string, error) {
		p.Spec.PriorityClassName = "low"
		return nil, nil
	})
	sent := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","creationTimestamp":null},"spec":{"containers":[{"name":"c","image":"busybox","resources":{}}]},"status":{}}`
	res, err := h.admitter.Admit(t.Context(), ports.AdmissionRequest{
		Version: "v1", Kind: "Pod", Resource: "pods", Namespace: "ns", Name: "p", Operation: ports.OperationCreate, Object: []byte(sent),
	})
	require.NoError(t, err)
	var got corev1.Pod
	require.NoError(t, json.Unmarshal(res.Object, &got))
	require.Equal(t, "low", got.Spec.PriorityClassName)
	require.Equal(t, "busybox", got.Spec.Containers[0].Image)
}

// FuzzMutator_Admit feeds the typed mutator any request object: it may
// deny one, but never panics, and what it returns is JSON.
func FuzzMutator_Admit(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"mc","namespace":"ns"},"spec":{"size":1}}`,
		`{"spec":{"size":1,"image":"x","extra":[1,2.50,null]},"status":7}`,
		`{"spec":null}`, `[]`, `null`, `"spec"`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	h := Mutate(admitResource, func(_ context.Context, _ Admission[admitObject], obj *admitObject) ([]string, error) {
		obj.Spec.Image = "memcached:1.6"
		obj.Status.Ready++
		obj.Labels = map[string]string{"defaulted": "true"}
		return nil, nil
	})
	f.Fuzz(func(t *testing.T, obj []byte) {
		res, err := h.admitter.Admit(context.Background(), request(Create, string(obj), ""))
		if err != nil {
			return
		}
		if res.Object != nil {
			require.True(t, json.Valid(res.Object), "%s", res.Object)
		}
	})
}
