package migration

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/ports"
	"github.com/loam-dev/loam/ports/portsmock"
)

const crdName = "memcacheds.cache.example.com"

// state is a CRD storing v1beta1, with v1alpha1 objects still stored.
func state() ports.StorageState {
	return ports.StorageState{Name: crdName, Storage: "v1beta1", StoredVersions: []string{"v1alpha1", "v1beta1"}, Generation: 2, ResourceVersion: "10"}
}

func obj(name string) ports.StoredObject {
	return ports.StoredObject{Namespace: "ns", Name: name, Object: map[string]any{"metadata": map[string]any{"name": name}}}
}

type mocks struct {
	objects *portsmock.MockStoredObjects
	crd     *portsmock.MockStorageDefinition
	rec     *portsmock.MockMigrationRecorder
}

func newMocks(t *testing.T) (mocks, Config) {
	ctrl := gomock.NewController(t)
	m := mocks{portsmock.NewMockStoredObjects(ctrl), portsmock.NewMockStorageDefinition(ctrl), portsmock.NewMockMigrationRecorder(ctrl)}
	m.rec.EXPECT().MigrationConflict(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes()
	return m, Config{Objects: m.objects, Definition: m.crd, Recorder: m.rec, Version: "v1beta1", PageSize: 2}
}

func TestTarget_and_Trim_decide_what_is_safe(t *testing.T) {
	moved := state()
	moved.Storage = "v1"
	changed := state()
	changed.Generation = 3
	for _, tc := range []struct {
		name    string
		now     ports.StorageState
		want    string
		wantErr string
	}{
		{"the same storage and generation: trimmed", state(), "v1beta1", ""},
		{"the storage moved", moved, "v1beta1", "its storage version moved from v1beta1 to v1"},
		{"the spec changed", changed, "v1beta1", "its spec changed during the migration (generation 2, then 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, err := Trim(state(), tc.now, tc.want)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Nil(t, to)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{"v1beta1"}, to)
		})
	}
	_, err := Target(state(), "v1alpha1")
	require.EqualError(t, err, "CRD "+crdName+": spec.versions stores v1beta1, not v1alpha1: apply the CRD that stores v1alpha1 first")
	v, err := Target(state(), "")
	require.NoError(t, err)
	require.Equal(t, "v1beta1", v)
	require.True(t, Done(ports.StorageState{StoredVersions: []string{"v1beta1"}}, "v1beta1"))
	require.False(t, Done(ports.StorageState{StoredVersions: []string{"v1beta1"}, Checkpoint: "{}"}, "v1beta1"))
	require.Error(t, CheckPageSize(0))
	require.Error(t, CheckConflictRetries(MaxConflictRetries+1))
}

// A fresh run lists two pages, rewrites each object, keeps a checkpoint
// after each page, the last one's saying only the trim is left, then
// trims and removes it.
func TestRun_rewrites_every_page_then_trims(t *testing.T) {
	m, c := newMocks(t)
	gomock.InOrder(
		m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil),
		m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any()),
		m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{Objects: []ports.StoredObject{obj("a"), obj("b")}, Continue: "t1"}, nil),
		m.objects.EXPECT().Rewrite(gomock.Any(), obj("a")),
		m.objects.EXPECT().Rewrite(gomock.Any(), obj("b")),
		m.crd.EXPECT().SaveCheckpoint(gomock.Any(), `{"version":"v1beta1","generation":2,"continue":"t1","pages":1,"rewritten":2,"gone":0,"conflicts":0,"last":"ns/b"}`),
		m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any()),
		m.objects.EXPECT().List(gomock.Any(), "t1", int64(2)).Return(ports.StoredPage{Objects: []ports.StoredObject{obj("c")}}, nil),
		m.objects.EXPECT().Rewrite(gomock.Any(), obj("c")).Return(fmt.Errorf("x: %w", ports.ErrGone)),
		m.crd.EXPECT().SaveCheckpoint(gomock.Any(), `{"version":"v1beta1","generation":2,"continue":"","listed":true,"pages":2,"rewritten":2,"gone":1,"conflicts":0,"last":"ns/b"}`),
		m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any()),
		m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil),
		m.crd.EXPECT().SetStoredVersions(gomock.Any(), state(), []string{"v1beta1"}),
		m.crd.EXPECT().SaveCheckpoint(gomock.Any(), ""),
		m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1beta1"}, nil),
	)
	res, err := Run(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, Result{
		MigrationProgress: ports.MigrationProgress{Resource: crdName, Version: "v1beta1", Pages: 2, Rewritten: 2, Gone: 1, Last: "ns/b"},
		StoredVersions:    []string{"v1beta1"},
	}, res)
}

// A run goes on from the checkpoint of the same storage version and
// generation, with its counts, and ignores one of another generation.
func TestRun_resumes_from_the_checkpoint(t *testing.T) {
	for _, tc := range []struct {
		name       string
		generation int64
		wantFrom   string
		wantCounts int
	}{
		{"the same generation: resumed", 2, "t1", 5},
		{"another generation: from the start", 1, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, c := newMocks(t)
			st := state()
			st.Checkpoint = fmt.Sprintf(`{"version":"v1beta1","generation":%d,"continue":"t1","pages":3,"rewritten":5}`, tc.generation)
			m.crd.EXPECT().Read(gomock.Any()).Return(st, nil).Times(2)
			m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any()).Do(func(_ context.Context, p ports.MigrationProgress) {
				require.Equal(t, tc.wantFrom != "", p.Resumed)
				require.Equal(t, tc.wantCounts, p.Rewritten)
			})
			m.objects.EXPECT().List(gomock.Any(), tc.wantFrom, int64(2)).Return(ports.StoredPage{}, nil)
			m.crd.EXPECT().SaveCheckpoint(gomock.Any(), gomock.Any()).Times(2)
			m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any())
			m.crd.EXPECT().SetStoredVersions(gomock.Any(), st, []string{"v1beta1"})
			m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1beta1"}, nil)
			_, err := Run(t.Context(), c)
			require.NoError(t, err)
		})
	}
}

// A conflict is retried on a fresh read, up to ConflictRetries times;
// past them the object counts as written in the storage version by
// whoever changed it (see TestRun_counts_an_object_that_keeps_conflicting_as_written).
func TestRun_retries_a_conflict(t *testing.T) {
	conflict := fmt.Errorf("update: %w", ports.ErrConflict)
	fresh := obj("a")
	fresh.Object = map[string]any{"fresh": true}
	for _, tc := range []struct {
		name          string
		conflicts     int
		wantRewritten int
	}{
		{"once: rewritten", 1, 1},
		{"past the retries: written by the other writer", 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, c := newMocks(t)
			c.ConflictRetries = 2
			m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil).Times(2)
			m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any())
			m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{Objects: []ports.StoredObject{obj("a")}}, nil)
			m.objects.EXPECT().Rewrite(gomock.Any(), obj("a")).Return(conflict)
			m.objects.EXPECT().Get(gomock.Any(), "ns", "a").Return(fresh, nil).Times(min(tc.conflicts, 2))
			m.objects.EXPECT().Rewrite(gomock.Any(), fresh).Return(conflict).Times(tc.conflicts - 1)
			if tc.wantRewritten == 1 {
				m.objects.EXPECT().Rewrite(gomock.Any(), fresh)
			}
			m.crd.EXPECT().SaveCheckpoint(gomock.Any(), gomock.Any()).Times(2)
			m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any())
			m.crd.EXPECT().SetStoredVersions(gomock.Any(), gomock.Any(), []string{"v1beta1"})
			var ended ports.MigrationProgress
			m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), gomock.Any(), nil).Do(
				func(_ context.Context, p ports.MigrationProgress, _ []string, _ error) { ended = p })
			_, err := Run(t.Context(), c)
			require.NoError(t, err)
			require.Equal(t, tc.conflicts, ended.Conflicts)
			require.Equal(t, tc.wantRewritten, ended.Rewritten)
		})
	}
}

// The storage moving during the run leaves storedVersions alone.
func TestRun_trims_nothing_when_the_CRD_changed(t *testing.T) {
	m, c := newMocks(t)
	changed := state()
	changed.Generation = 3
	gomock.InOrder(
		m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil),
		m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any()),
		m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{}, nil),
		m.crd.EXPECT().SaveCheckpoint(gomock.Any(), gomock.Any()),
		m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any()),
		m.crd.EXPECT().Read(gomock.Any()).Return(changed, nil),
		m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1alpha1", "v1beta1"}, gomock.Not(nil)),
	)
	_, err := Run(t.Context(), c)
	require.ErrorContains(t, err, "its spec changed during the migration")
}

// An expired continue token is replaced by the API server's own, and a
// CRD already trimmed needs no run at all.
func TestRun_replaces_an_expired_token_and_skips_a_done_CRD(t *testing.T) {
	m, c := newMocks(t)
	st := state()
	st.Checkpoint = `{"version":"v1beta1","generation":2,"continue":"old"}`
	m.crd.EXPECT().Read(gomock.Any()).Return(st, nil).Times(2)
	m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any())
	m.objects.EXPECT().List(gomock.Any(), "old", int64(2)).Return(ports.StoredPage{}, &ports.ContinueExpiredError{Continue: "new", Err: errors.New("410")})
	m.objects.EXPECT().List(gomock.Any(), "new", int64(2)).Return(ports.StoredPage{}, nil)
	m.crd.EXPECT().SaveCheckpoint(gomock.Any(), gomock.Any()).Times(2)
	m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any())
	m.crd.EXPECT().SetStoredVersions(gomock.Any(), st, []string{"v1beta1"})
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1beta1"}, nil)
	_, err := Run(t.Context(), c)
	require.NoError(t, err)

	m, c = newMocks(t)
	done := state()
	done.StoredVersions = []string{"v1beta1"}
	m.crd.EXPECT().Read(gomock.Any()).Return(done, nil)
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1beta1"}, nil)
	res, err := Run(t.Context(), c)
	require.NoError(t, err)
	require.Zero(t, res.Pages)
}
