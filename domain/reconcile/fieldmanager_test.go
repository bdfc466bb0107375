package reconcile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/ports"
)

func TestFieldManager_defaults_to_the_controller_and_refuses_its_own_object_under_its_name(t *testing.T) {
	reconciled := ports.Key{Namespace: "ns", Name: "a"}
	memcached := schema.GroupKind{Group: "cache.example.com", Kind: "Memcached"}
	object := []byte(`{"apiVersion":"cache.example.com/v1","kind":"Memcached"}`)
	inPass := reconcile.InPass(t.Context(), "memcached", reconciled, "uid-a", object)
	for _, c := range []struct {
		name    string
		ctx     context.Context
		given   string
		key     ports.Key
		uid     string
		gk      schema.GroupKind
		want    string
		wantErr string
	}{
		{name: "outside a pass, as given", ctx: t.Context(), given: "mine", key: reconciled, gk: memcached, want: "mine"},
		{name: "outside a pass, none given", ctx: t.Context(), key: reconciled, gk: memcached, want: ""},
		{name: "in a pass of an unnamed controller", ctx: reconcile.InPass(t.Context(), "", reconciled, "uid-a", object), key: ports.Key{Name: "b"}, gk: memcached, want: ""},
		{name: "another object defaults to the controller", ctx: inPass, key: ports.Key{Namespace: "ns", Name: "b"}, gk: memcached, want: "memcached"},
		{name: "a renamed copy, same uid, is another object", ctx: inPass, key: ports.Key{Namespace: "ns", Name: "b"}, uid: "uid-a", gk: memcached, want: "memcached"},
		{name: "the reconciled object keeps none", ctx: inPass, key: reconciled, uid: "uid-a", gk: memcached, want: ""},
		{name: "another kind of the same name is another object", ctx: inPass, key: reconciled, gk: schema.GroupKind{Kind: "ConfigMap"}, want: "memcached"},
		{name: "the reconciled object by its kind, under another name", ctx: inPass, given: "mine", key: reconciled, gk: memcached, want: "mine"},
		{name: "the reconciled object by its uid, under the controller's name", ctx: inPass, given: "memcached", key: reconciled, uid: "uid-a", gk: schema.GroupKind{}, want: "memcached",
			wantErr: `ApplyOptions.FieldManager is "memcached", the controller's own (Settings.Name), and the object is the one being reconciled`},
		{name: "the reconciled object by its kind, under the controller's name", ctx: inPass, given: "memcached", key: reconciled, gk: memcached, want: "memcached",
			wantErr: "would remove what this apply declares"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := reconcile.FieldManager(c.ctx, c.given, c.key, types.UID(c.uid), c.gk)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, c.want, got)
		})
	}
}
