package explore

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// TestRecover_starts_a_fresh_replica_once_the_server_is_back: a crash
// that comes while the API server restarts, as seed-1-sequence-14 of the
// Memcached example found (d68c119), must not start the fresh replica
// until the restart is over, or it fails its first list and exits. The
// kept sequences show it only when the fresh replica's first list lands
// while the server is down, which a loaded machine seldom makes happen:
// here, recover is still waiting when every goroutine of the bubble
// blocks, and goes on once the restart ends.
func TestRecover_starts_a_fresh_replica_once_the_server_is_back(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := apptest.Start(t, func(context.Context, *app.Setup) ([]app.Service, error) { return nil, nil })
		a.Setup()
		restart := make(chan struct{})
		e := &explorer{build: func(*app.Setup, *kube.Client, string) ([]app.Service, error) {
			return nil, errors.New("the fresh replica started")
		}}
		r := &replicas{t: t, e: e, app: a, w: &writes{crashed: true}, server: &restarter{begun: 1, done: restart}}
		returned := make(chan error, 1)
		go func() { returned <- r.recover() }()
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("recover started a fresh replica while the API server restarted (%v)", err)
		default:
		}
		close(restart)
		synctest.Wait()
		select {
		case err := <-returned:
			// It started one, which, with no cluster here, fails: how
			// (exited, or still running when the Build gave up) varies.
			require.Error(t, err)
		default:
			t.Fatal("recover still waits once the restart is over")
		}
	})
}
