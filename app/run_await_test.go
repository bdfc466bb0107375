package app_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

func TestRunStopsOnSignal(t *testing.T) {
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Interrupt} {
		t.Run(sig.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestProcess(nil)
				var j journal
				var serveCtx context.Context
				svc := &fakeService{name: "a", journal: &j, serve: func(ctx context.Context) error {
					serveCtx = ctx
					<-ctx.Done()
					return nil
				}}
				var deadline time.Time
				svc.shutdown = func(ctx context.Context) error {
					deadline, _ = ctx.Deadline()
					return nil
				}
				codes := start(t.Context(), services(svc), p.option(), app.WithGracePeriod(7*time.Second))
				synctest.Wait()
				require.Empty(t, j.list(), "serving until a signal")

				stopped := time.Now()
				p.signals <- sig
				require.Equal(t, 0, <-codes)
				require.ErrorIs(t, serveCtx.Err(), context.Canceled)
				require.Equal(t, stopped.Add(7*time.Second), deadline, "Shutdown's context ends after the grace period")
				require.ElementsMatch(t, []string{"a serve returned", "a shutdown"}, j.list())
				require.Equal(t, sig.String(), p.record(t, "stopping").Attributes["loam.app.signal"])
			})
		})
	}
}

func TestRunStopsWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		var j journal
		ctx, cancel := context.WithCancel(t.Context())
		// A Serve that returns its context's error stopped as asked.
		svc := &fakeService{name: "a", journal: &j, serve: func(ctx context.Context) error {
			<-ctx.Done()
			return fmt.Errorf("watching: %w", ctx.Err())
		}}
		codes := start(ctx, services(svc), p.option())
		synctest.Wait()
		cancel()
		require.Equal(t, 0, <-codes, "stderr:\n%s", p.stderr.String())
		require.ElementsMatch(t, []string{"a serve returned", "a shutdown"}, j.list())
	})
}

func TestRunSecondSignalExitsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		release := make(chan struct{})
		defer close(release)
		stuck := &fakeService{name: "stuck", shutdown: func(context.Context) error {
			<-release // ignores its context: only a second signal ends the App
			return nil
		}}
		codes := start(t.Context(), services(stuck), p.option(), app.WithGracePeriod(time.Hour))
		synctest.Wait()
		p.signals <- syscall.SIGTERM
		synctest.Wait()
		select {
		case code := <-codes:
			t.Fatalf("the App exited with %d while its Shutdown ran", code)
		default:
		}

		start := time.Now()
		p.signals <- syscall.SIGINT
		require.Equal(t, 1, <-codes)
		require.Equal(t, start, time.Now(), "no time passes: the App does not wait")
		require.Equal(t, "interrupt", p.record(t, "asked again to stop: exiting at once").Attributes["loam.app.signal"])
	})
}

func TestRunSecondSignalDuringInitExitsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		release := make(chan struct{})
		defer close(release)
		init := func(context.Context, *app.Setup) ([]app.Service, error) {
			<-release
			return nil, nil
		}
		codes := start(t.Context(), init, p.option())
		synctest.Wait()
		p.signals <- syscall.SIGTERM
		p.signals <- syscall.SIGTERM
		require.Equal(t, 1, <-codes)
	})
}

func TestRunSignalDuringInitEndsCleanly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		init := func(ctx context.Context, _ *app.Setup) ([]app.Service, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		codes := start(t.Context(), init, p.option())
		synctest.Wait()
		p.signals <- syscall.SIGTERM
		require.Equal(t, 0, <-codes, "stderr:\n%s", p.stderr.String())
		_, plain := p.logLines(t)
		require.Empty(t, plain, "an Init that stopped as asked did not fail")
	})
}

func TestRunClosedSignalsChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		close(p.signals)
		ctx, cancel := context.WithCancel(t.Context())
		codes := start(ctx, services(&fakeService{name: "a"}), p.option())
		synctest.Wait()
		select {
		case code := <-codes:
			t.Fatalf("a closed Signals channel stopped the App with %d", code)
		default:
		}
		cancel()
		require.Equal(t, 0, <-codes)
	})
}
