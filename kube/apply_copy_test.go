package kube_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kube"
)

// A Reconciler that makes a sibling of the reconciled object by copying
// it and renaming the copy (its ObjectMeta, uid included, comes along)
// applies another object: Apply never sends the uid, and the API server
// names objects by namespace and name. So the field manager defaults to
// Settings.Name, as for any object but the reconciled one.
func TestApply_of_a_renamed_copy_of_the_reconciled_object_is_another_object(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &applyServer{}
		c := startApplyServer(t, api, nil)
		sibling := parent()
		sibling.Name = "p-backup" // the uid is still the parent's
		inReconcile(t, func(ctx context.Context) {
			_, err := parents.Apply(ctx, c, sibling, kube.ApplyOptions{})
			require.NoError(t, err, "p-backup is not the reconciled ns/p")
		})
		sent := api.requests()
		require.Len(t, sent, 1)
		require.Equal(t, "fieldManager=parent-controller&force=true", sent[0].query)
	})
}

// The same copy under the controller's own name is not refused as "the
// object being reconciled", which it is not.
func TestApply_of_a_renamed_copy_under_Settings_Name_is_not_refused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &applyServer{}
		c := startApplyServer(t, api, nil)
		sibling := parent()
		sibling.Name = "p-backup"
		inReconcile(t, func(ctx context.Context) {
			_, err := parents.Apply(ctx, c, sibling, kube.ApplyOptions{FieldManager: "parent-controller"})
			require.NoError(t, err)
		})
		require.Len(t, api.requests(), 1)
	})
}
