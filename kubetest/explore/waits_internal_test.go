package explore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kube"
)

// TestUnsettled pins what a wait for the operator to settle says when it
// runs out and the objects said nothing: the step's check and the fresh
// create's say it alike. The fresh create's said "still writes" of an
// operator that had written nothing for 9.9 s, reconciling in a loop
// (make explore, the loop's planted bug on a loaded machine).
func TestUnsettled(t *testing.T) {
	const wanted = 300 * time.Millisecond
	for _, tc := range []struct {
		name         string
		synced       bool
		busy         []string
		since, quiet time.Duration
		world, want  string
	}{
		{"caches not synced", false, nil, time.Second, time.Second, "", "the operator's caches haven't synced"},
		{"reconciling, writing nothing", true, []string{"Memcached ns/explore-0"}, 9874 * time.Millisecond, 0, "",
			"the operator is still reconciling Memcached ns/explore-0, having written nothing for 9.874s"},
		{"reconciling, just written", true, []string{"Memcached ns/explore-0"}, 100 * time.Millisecond, 0, "",
			"the operator still writes, the last time 100ms ago"},
		{"quiet, the world moving", true, nil, time.Second, time.Second, "the Deployment explore-0 rolls out", "the Deployment explore-0 rolls out"},
		{"writing, the world moving", true, nil, 100 * time.Millisecond, 100 * time.Millisecond, "the Deployment explore-0 rolls out",
			"the operator still writes, the last time 100ms ago"},
		{"writing", true, nil, 20 * time.Millisecond, 20 * time.Millisecond, "", "the operator still writes, the last time 20ms ago"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, unsettled(tc.synced, tc.busy, tc.since, tc.quiet, wanted, tc.world))
		})
	}
}

// TestRestartedOut pins which exits of a replica the explorer takes for
// the API server's restart, starting a fresh replica as the kubelet
// would, and which it reports as the operator's. make explore's
// databases run reported a replica that lost its Lease while a restart
// took 15 s, on a loaded machine: kube.Controller exits so, by design.
func TestRestartedOut(t *testing.T) {
	lost := []string{kube.ErrLostLeadership.Error()}
	for _, tc := range []struct {
		name              string
		synced, restarted bool
		failed            []string
		want              bool
	}{
		{"its first list failed in a restart", false, true, nil, true},
		{"its Lease lost in a restart", true, true, lost, true},
		{"its Lease lost, no restart", true, false, lost, false},
		{"never synced, no restart", false, false, nil, false},
		{"another failure in a restart", true, true, []string{"reconciling: boom"}, false},
		{"exited cleanly in a restart", true, true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, restartedOut(tc.synced, tc.restarted, tc.failed))
		})
	}
}
