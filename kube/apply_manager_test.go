package kube_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/reconcile"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

// handlerFunc is a Handler whose Reconcile calls f with its context.
type handlerFunc func(ctx context.Context)

func (f handlerFunc) Reconcile(ctx context.Context, _ ports.Object) (ports.Result, error) {
	f(ctx)
	return ports.Result{}, nil
}

func (handlerFunc) Finalize(context.Context, ports.Object) error { return nil }

// inReconcile calls f in the context of a pass of the controller
// parent-controller over parent(), as the controller's runtime calls a
// Reconciler.
func inReconcile(t *testing.T, f func(ctx context.Context)) {
	t.Helper()
	ctrl := gomock.NewController(t)
	p := parent()
	key := ports.Key{Namespace: p.Namespace, Name: p.Name}
	source := portsmock.NewMockObjectSource(ctrl)
	source.EXPECT().Get(key).Return(ports.Object{
		UID:  p.UID,
		JSON: []byte(`{"apiVersion":"example.com/v1alpha1","kind":"Parent","metadata":{"name":"p","namespace":"ns","uid":"parent-uid"}}`),
	}, true, nil)
	rec := portsmock.NewMockRecorder(ctrl)
	rec.EXPECT().ReconcileStarted(gomock.Any(), key).DoAndReturn(
		func(ctx context.Context, _ ports.Key) context.Context { return ctx })
	rec.EXPECT().ReconcileEnded(gomock.Any(), key, gomock.Any())
	clock := portsmock.NewMockClock(ctrl)
	clock.EXPECT().Now().Return(time.Time{}).AnyTimes()
	called := false
	l, err := reconcile.New(reconcile.Config{
		Name: "parent-controller", Source: source, Writer: portsmock.NewMockWriter(ctrl),
		Queue: portsmock.NewMockQueue(ctrl), Recorder: rec, Clock: clock,
		Handler: handlerFunc(func(ctx context.Context) {
			called = true
			f(ctx)
		}),
	})
	require.NoError(t, err)
	l.Reconcile(t.Context(), key)
	require.True(t, called)
}

func TestResource_Apply_in_a_reconcile_applies_under_the_controller_s_name(t *testing.T) {
	child := childObject{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	// namesake is a Child named as the reconciled Parent: another object.
	namesake := childObject{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	for _, tc := range []struct {
		name    string
		apply   func(ctx context.Context, c *kube.Client) error
		manager string
	}{
		{
			name: "a child, with no field manager, is applied under Settings.Name",
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := children.Apply(ctx, c, child, kube.ApplyOptions{Owner: parents.Owner(parent())})
				return err
			},
			manager: "parent-controller",
		},
		{
			name: "a child keeps the field manager given",
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := children.Apply(ctx, c, child, kube.ApplyOptions{FieldManager: "child-writer"})
				return err
			},
			manager: "child-writer",
		},
		{
			name: "an object of another resource named as the reconciled one is another object",
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := children.Apply(ctx, c, namesake, kube.ApplyOptions{})
				return err
			},
			manager: "parent-controller",
		},
		{
			name: "the reconciled object itself is applied under another field manager",
			apply: func(ctx context.Context, c *kube.Client) error {
				_, err := parents.Apply(ctx, c, parent(), kube.ApplyOptions{FieldManager: "parent-spec-writer"})
				return err
			},
			manager: "parent-spec-writer",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &applyServer{}
				c := startApplyServer(t, api, nil)
				inReconcile(t, func(ctx context.Context) {
					require.NoError(t, tc.apply(ctx, c))
				})
				sent := api.requests()
				require.Len(t, sent, 1)
				require.Equal(t, "fieldManager="+tc.manager+"&force=true", sent[0].query)
			})
		})
	}
}

func TestResource_Apply_in_a_reconcile_refuses_the_reconciled_object_under_the_controller_s_name(t *testing.T) {
	// byName is the reconciled Parent as a Reconciler may build it anew,
	// without its uid.
	byName := parent()
	byName.UID = ""
	for _, tc := range []struct {
		name string
		obj  childObject
		opts kube.ApplyOptions
		want string
	}{
		{
			name: "named by its uid",
			obj:  parent(),
			opts: kube.ApplyOptions{FieldManager: "parent-controller"},
			want: `kube: apply of Parent.example.com "ns/p": ApplyOptions.FieldManager is "parent-controller", the controller's own (Settings.Name), and the object is the one being reconciled`,
		},
		{
			name: "named by its resource, namespace and name",
			obj:  byName,
			opts: kube.ApplyOptions{FieldManager: "parent-controller"},
			want: `kube: apply of Parent.example.com "ns/p": ApplyOptions.FieldManager is "parent-controller", the controller's own (Settings.Name)`,
		},
		{
			name: "with no field manager, which doesn't default to the controller's name",
			obj:  parent(),
			want: `kube: apply of Parent.example.com "ns/p": ApplyOptions.FieldManager is empty`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &applyServer{}
				c := startApplyServer(t, api, nil)
				inReconcile(t, func(ctx context.Context) {
					_, err := parents.Apply(ctx, c, tc.obj, tc.opts)
					require.ErrorContains(t, err, tc.want)
				})
				require.Empty(t, api.requests(), "nothing is sent")
			})
		})
	}
}

func TestResource_Apply_outside_a_reconcile_requires_a_field_manager(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &applyServer{}
		c := startApplyServer(t, api, nil)
		child := childObject{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
		_, err := children.Apply(t.Context(), c, child, kube.ApplyOptions{})
		require.ErrorContains(t, err, "ApplyOptions.FieldManager is empty")
		// The controller's name is anyone's to use outside a reconcile.
		_, err = parents.Apply(t.Context(), c, parent(), kube.ApplyOptions{FieldManager: "parent-controller"})
		require.NoError(t, err)
		sent := api.requests()
		require.Len(t, sent, 1)
		require.Equal(t, "fieldManager=parent-controller&force=true", sent[0].query)
	})
}
