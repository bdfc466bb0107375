package explore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/loam-dev/loam/kubetest/internal/generate"
	"github.com/loam-dev/loam/kubetest/internal/memcached"
)

// versionsCluster is an explorer of memcachedsGVR, and a replay of it in
// the namespace ns, on a fake client that holds explore-0 with the spec
// read, as the API server reads it back in the explored version, and
// answers a create with the spec dry, as the dry run of the explored
// version reads back, or, when dry is nil, refuses it as an admission
// webhook denies it.
// more are objects it holds besides.
func versionsCluster(read, dry map[string]any, more ...runtime.Object) (*explorer, *replicas, *dynamicfake.FakeDynamicClient) {
	stored := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "explore.loam.dev/v1", "kind": "Memcached",
		"metadata": map[string]any{"name": "explore-0", "namespace": "ns", "uid": "uid-0"},
		"spec":     read,
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		memcachedsGVR: "MemcachedList", {Group: "explore.loam.dev", Version: "v2", Resource: "memcacheds"}: "MemcachedList",
	}, append([]runtime.Object{stored}, more...)...)
	client.PrependReactor("create", "memcacheds", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		if dry == nil {
			return true, nil, apierrors.NewForbidden(memcachedsGVR.GroupResource(), u.GetName(), errors.New(`admission webhook "validate.memcached" denied the request: no image`))
		}
		out := u.DeepCopy()
		out.Object["spec"] = runtime.DeepCopyJSON(dry)
		return true, out, nil
	})
	e := &explorer{admin: client, gvr: memcachedsGVR, kind: "Memcached", apiVersion: "explore.loam.dev/v1", quiet: time.Millisecond, settle: time.Second}
	return e, &replicas{e: e, ns: "ns", w: &writes{}, server: &restarter{}}, client
}

// TestAgree checks that the versions' oracle fires: a step written in
// another version whose spec reads back in the explored version otherwise
// than the same spec written there, or that one version admits and the
// other refuses, fails; one that reads back alike, or is refused in both,
// or isn't the oracle's (written in the explored version, a delete, a
// step wasted), doesn't.
func TestAgree(t *testing.T) {
	spec := map[string]any{"size": int64(3), "image": "memcached:1.6"}
	lost := map[string]any{"size": int64(3)}
	update := generate.Step{Op: generate.Update, Name: "explore-0", Spec: spec, Version: "v2"}
	for _, tc := range []struct {
		name      string
		step      generate.Step
		read, dry map[string]any // dry nil: the dry run is refused
		m         made
		err       string
	}{
		{name: "reads back alike", step: update, read: spec, dry: spec},
		{name: "a field lost by the conversion", step: update, read: lost, dry: spec,
			err: `written in v2, explore-0's spec reads back in v1 as {"size":3}, where the same spec written in v1 reads back as {"image":"memcached:1.6","size":3}`},
		{name: "admitted in the step's version, refused in the explored one", step: update, read: spec,
			err: `the API server admits the spec in v2 and refuses it in v1: memcacheds.explore.loam.dev "explore-0-dry-run" is forbidden: admission webhook "validate.memcached" denied the request: no image`},
		{name: "refused in the step's version, admitted in the explored one", step: update, read: spec, dry: spec, m: made{refused: "invalid"},
			err: "the API server refuses the spec in v2 and admits it in v1: invalid"},
		{name: "refused in both", step: update, read: spec, m: made{refused: "invalid"}},
		{name: "written in the explored version", step: generate.Step{Op: generate.Update, Name: "explore-0", Spec: spec}, read: lost, dry: spec},
		{name: "a delete", step: generate.Step{Op: generate.Delete, Name: "explore-0", Version: "v2"}, read: lost, dry: spec},
		{name: "wasted", step: update, read: lost, dry: spec, m: made{wasted: true}},
		{name: "refused while the operator was down, made once it was back", step: update, read: lost, dry: spec, m: made{down: true, downRefused: "failed calling webhook"},
			err: `written in v2, explore-0's spec reads back in v1 as {"size":3}, where the same spec written in v1 reads back as {"image":"memcached:1.6","size":3}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, r, _ := versionsCluster(tc.read, tc.dry)
			err := e.agree(t.Context(), r, tc.step, tc.m)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.err)
		})
	}
}

// A change made while the operator was down, and admitted at its first
// try, was admitted without the operator's admission webhooks, as
// failurePolicy Ignore lets the API server do: a dry run with them back
// refuses it, or defaults it otherwise, and that says nothing of the
// conversion. The versions' oracle leaves it alone, where it failed the
// step, naming the webhooks' refusal or their defaults as the
// conversion's fault.
func TestAgree_not_for_a_change_admitted_while_the_webhooks_were_down(t *testing.T) {
	spec := map[string]any{"size": int64(3)}
	defaulted := map[string]any{"size": int64(3), "image": "memcached:1.6"}
	update := generate.Step{Op: generate.Update, Name: "explore-0", Spec: spec, Version: "v2"}
	for _, tc := range []struct {
		name string
		dry  map[string]any
	}{
		{"the webhooks, back, refuse the spec", nil},
		{"the webhooks, back, default the spec", defaulted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, r, _ := versionsCluster(spec, tc.dry)
			require.NoError(t, e.agree(t.Context(), r, update, made{down: true}))
		})
	}
}

// The fresh create leaves alone an object whose spec the API server
// admitted while the operator's admission webhooks were down: the
// webhooks, back, refuse a fresh object of it (or would default it
// otherwise), which says nothing of the operator. Until then, and once a
// later change of it is admitted with them, a refused fresh create fails
// the step, as before.
func TestFresh_not_of_a_spec_admitted_while_the_webhooks_were_down(t *testing.T) {
	spec := map[string]any{"size": int64(3)}
	update := generate.Step{Op: generate.Update, Name: "explore-0", Spec: spec}
	e, r, client := versionsCluster(spec, nil)
	objects := client.Resource(memcachedsGVR).Namespace("ns")
	const refused = `creating a fresh Memcached explore-0-fresh of the same spec: memcacheds.explore.loam.dev "explore-0-fresh" is forbidden: `
	require.ErrorContains(t, e.fresh(t.Context(), objects, r, update), refused)

	for _, tc := range []struct {
		name  string
		step  generate.Step
		m     made
		fresh bool
	}{
		{"admitted while down", update, made{down: true}, false},
		{"a later change refused", update, made{refused: "invalid"}, false},
		{"a later change wasted", update, made{wasted: true}, false},
		{"a later change made once the operator was back", update, made{down: true, downRefused: "failed calling webhook"}, true},
		{"admitted while down again", update, made{down: true}, false},
		{"deleted while down", generate.Step{Op: generate.Delete, Name: "explore-0"}, made{down: true}, true},
		{"created while down", generate.Step{Op: generate.Create, Name: "explore-0", Spec: spec}, made{down: true}, false},
		{"updated with the operator up", update, made{}, true},
	} {
		r.admitted(tc.step, tc.m)
		err := e.fresh(t.Context(), objects, r, update)
		if tc.fresh {
			require.ErrorContains(t, err, refused, tc.name)
		} else {
			require.NoError(t, err, tc.name)
		}
	}
}

// A conversion that loses a field on its way to the explored version
// loses it from the dry run too, which reads back through it: the two
// agree. Read back in the step's own version, the field is there, and
// the versions' oracle fires; a field the step didn't write (a default
// of that version alone) isn't compared.
func TestAgree_a_conversion_that_loses_a_field_on_its_way_to_the_explored_version(t *testing.T) {
	cfg := Config[memcached.Spec, memcached.Status]{Resource: memcached.Resource("explore.loam.dev"), Versions: []Version[memcached.Spec]{VersionOf(v2("explore.loam.dev"), toSpec2)}}
	versions, _, err := versionsOf(cfg, nil)
	require.NoError(t, err)
	inV2 := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "explore.loam.dev/v2", "kind": "Memcached",
			"metadata": map[string]any{"name": "explore-0", "namespace": "ns", "uid": "uid-0"},
			"spec":     spec,
		}}
	}
	lost := map[string]any{"size": int64(3)}
	for _, tc := range []struct {
		name    string
		written map[string]any
		read    map[string]any // in v1, and the dry run's
		v2      map[string]any
		err     string
	}{
		{name: "kept", written: map[string]any{"size": int64(3), "image": "memcached:1.6"}, read: map[string]any{"size": int64(3), "image": "memcached:1.6"},
			v2: map[string]any{"replicas": int64(3), "image": "memcached:1.6"}},
		{name: "lost", written: map[string]any{"size": int64(3), "image": "memcached:1.6"}, read: lost,
			v2:  map[string]any{"replicas": int64(3), "image": "memcached:1.6"},
			err: `written in v2, explore-0's spec reads back in v2 with image "memcached:1.6", where its spec read in v1 has, in v2, null: the conversion to v1 loses or changes what was written`},
		{name: "changed", written: map[string]any{"size": int64(3)}, read: map[string]any{"size": int64(2)},
			v2:  map[string]any{"replicas": int64(3)},
			err: `written in v2, explore-0's spec reads back in v2 with replicas 3, where its spec read in v1 has, in v2, 2: the conversion to v1 loses or changes what was written`},
		{name: "a default of v2's alone", written: lost, read: lost, v2: map[string]any{"replicas": int64(3), "image": "memcached:1.6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, r, _ := versionsCluster(tc.read, tc.read, inV2(tc.v2))
			e.otherVersions = versions
			err := e.agree(t.Context(), r, generate.Step{Op: generate.Update, Name: "explore-0", Spec: tc.written, Version: "v2"}, made{})
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.err)
		})
	}
}
