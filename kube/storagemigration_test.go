package kube_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kube"
)

// NewStorageMigration reports every mistake of its arguments in one
// error, and makes no request.
func TestNewStorageMigration_names_every_mistake_at_once(t *testing.T) {
	_, err := kube.NewStorageMigration(nil, nil, kube.Resource[struct{}, NoStatus]{Kind: "Thing"}, kube.StorageMigrationSettings{
		PageSize: kube.MaxStorageMigrationPageSize + 1, ConflictRetries: -1, FieldManager: strings.Repeat("m", 129),
	})
	require.EqualError(t, err, strings.Join([]string{
		"kube: NewStorageMigration: the Setup is nil: pass the one Init is given",
		"kube: NewStorageMigration: the Client is nil",
		"kube: StorageMigrationSettings.PageSize: 10001 is out of range: want 1 to 10000 objects a page (0 for 500)",
		"kube: StorageMigrationSettings.ConflictRetries: -1 is out of range: want 1 to 100 retries (0 for 5)",
		"kube: StorageMigrationSettings.FieldManager: 129 characters long: a field manager's name has at most 128",
		"kube: NewStorageMigration: the Resource's Group is empty",
		"kube: NewStorageMigration: the Resource's Version is empty",
		"kube: NewStorageMigration: the Resource's Plural is empty",
	}, "\n"))
}
