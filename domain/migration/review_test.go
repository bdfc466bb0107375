package migration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/loam-dev/loam/ports"
)

// An object that a controller updates faster than the migration can read
// and write it conflicts on every try. Each conflict is a write made
// after the run's list, so in the storage version already: the run goes
// on and trims. (It failed the run, for good, before.)
func TestRun_counts_an_object_that_keeps_conflicting_as_written(t *testing.T) {
	m, c := newMocks(t)
	c.ConflictRetries = 2
	conflict := fmt.Errorf("update: %w", ports.ErrConflict)
	m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil).Times(2)
	m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any())
	m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{Objects: []ports.StoredObject{obj("hot"), obj("b")}}, nil)
	m.objects.EXPECT().Rewrite(gomock.Any(), obj("hot")).Return(conflict).Times(3)
	m.objects.EXPECT().Get(gomock.Any(), "ns", "hot").Return(obj("hot"), nil).Times(2)
	m.objects.EXPECT().Rewrite(gomock.Any(), obj("b"))
	m.crd.EXPECT().SaveCheckpoint(gomock.Any(), gomock.Any()).AnyTimes()
	m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any())
	m.crd.EXPECT().SetStoredVersions(gomock.Any(), state(), []string{"v1beta1"})
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1beta1"}, nil)
	res, err := Run(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, 1, res.Rewritten)
	require.Equal(t, 3, res.Conflicts)
}

// A run that rewrote every page and then stopped (its context ended, or
// the trim was refused) leaves what it did on the CRD: the next run goes
// straight to the trim instead of rewriting every object again. (It
// started over before.)
func TestRun_stopped_before_the_trim_resumes_at_the_trim(t *testing.T) {
	m, c := newMocks(t)
	var saved string
	m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil).Times(2)
	m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any())
	m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{Objects: []ports.StoredObject{obj("a")}}, nil)
	m.objects.EXPECT().Rewrite(gomock.Any(), obj("a"))
	m.crd.EXPECT().SaveCheckpoint(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, cp string) error { saved = cp; return nil }).AnyTimes()
	m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any())
	m.crd.EXPECT().SetStoredVersions(gomock.Any(), state(), []string{"v1beta1"}).Return(context.Canceled)
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Not(nil))
	_, err := Run(t.Context(), c)
	require.ErrorIs(t, err, context.Canceled)

	// The second run: no list, no rewrite, the trim at once.
	m, c = newMocks(t)
	st := state()
	st.Checkpoint = saved
	m.crd.EXPECT().Read(gomock.Any()).Return(st, nil).Times(2)
	m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any())
	m.crd.EXPECT().SaveCheckpoint(gomock.Any(), "").AnyTimes()
	m.crd.EXPECT().SetStoredVersions(gomock.Any(), st, []string{"v1beta1"})
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1beta1"}, nil)
	res, err := Run(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, 1, res.Rewritten, "the first run's count")
}

// An object that a validating webhook or the new schema refuses doesn't
// stop the run at the first such object (it did before: the user found
// the next only after fixing one and running again). The others are
// still rewritten, every refused object named together, the checkpoint
// held before the first refusal (no SaveCheckpoint is expected), and
// nothing trimmed.
func TestRun_names_every_refused_object_and_holds_the_checkpoint(t *testing.T) {
	m, c := newMocks(t)
	refused := func(name string) error {
		return fmt.Errorf("%w: admission webhook %q denied the request: %s", ports.ErrRefused, "v.memcached", name)
	}
	m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil)
	m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any())
	m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{Objects: []ports.StoredObject{obj("a"), obj("b")}, Continue: "t1"}, nil)
	m.objects.EXPECT().Rewrite(gomock.Any(), obj("a")).Return(refused("a"))
	m.objects.EXPECT().Rewrite(gomock.Any(), obj("b"))
	m.objects.EXPECT().List(gomock.Any(), "t1", int64(2)).Return(ports.StoredPage{Objects: []ports.StoredObject{obj("c")}}, nil)
	m.objects.EXPECT().Rewrite(gomock.Any(), obj("c")).Return(refused("c"))
	m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any()).AnyTimes()
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1alpha1", "v1beta1"}, gomock.Not(nil))
	res, err := Run(t.Context(), c)
	require.ErrorIs(t, err, ports.ErrRefused)
	require.ErrorContains(t, err, "rewriting ns/a")
	require.ErrorContains(t, err, "rewriting ns/c")
	require.Equal(t, 1, res.Rewritten)
	require.Equal(t, []string{"v1alpha1", "v1beta1"}, res.StoredVersions)
}

// A checkpoint annotation that doesn't parse (edited by hand, cut short)
// failed every run for good, with an error that didn't say which
// annotation to remove. Starting over is always safe: a rewrite of an
// object already stored in the new version changes nothing.
func TestRun_starts_over_from_a_corrupt_checkpoint(t *testing.T) {
	m, c := newMocks(t)
	st := state()
	st.Checkpoint = `{"version":"v1beta1","gener`
	m.crd.EXPECT().Read(gomock.Any()).Return(st, nil).Times(2)
	m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any()).Do(func(_ context.Context, p ports.MigrationProgress) {
		require.False(t, p.Resumed)
	})
	m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{}, nil)
	m.crd.EXPECT().SaveCheckpoint(gomock.Any(), gomock.Any()).AnyTimes()
	m.rec.EXPECT().MigrationPage(gomock.Any(), gomock.Any())
	m.crd.EXPECT().SetStoredVersions(gomock.Any(), st, []string{"v1beta1"})
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1beta1"}, nil)
	_, err := Run(t.Context(), c)
	require.NoError(t, err)
}

// Refused objects stop the run once maxRefused of them are named: past
// them the rest are likely refused for the same reason, and a page of
// 500 would otherwise make 500 requests and an error of 500 lines.
func TestRun_stops_after_maxRefused_refused_objects(t *testing.T) {
	m, c := newMocks(t)
	page := make([]ports.StoredObject, maxRefused+5)
	for i := range page {
		page[i] = obj(fmt.Sprint("m", i))
	}
	m.crd.EXPECT().Read(gomock.Any()).Return(state(), nil)
	m.rec.EXPECT().MigrationStarted(gomock.Any(), gomock.Any())
	m.objects.EXPECT().List(gomock.Any(), "", int64(2)).Return(ports.StoredPage{Objects: page, Continue: "t1"}, nil)
	m.objects.EXPECT().Rewrite(gomock.Any(), gomock.Any()).Return(fmt.Errorf("x: %w", ports.ErrRefused)).Times(maxRefused)
	m.rec.EXPECT().MigrationEnded(gomock.Any(), gomock.Any(), []string{"v1alpha1", "v1beta1"}, gomock.Not(nil))
	_, err := Run(t.Context(), c)
	require.ErrorIs(t, err, ports.ErrRefused)
	require.ErrorContains(t, err, fmt.Sprintf("%d objects refused, the run stopped there", maxRefused))
}
