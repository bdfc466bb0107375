package app_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

func TestRunShutsDownServicesReturnedAfterAStopRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		var j journal
		release := make(chan struct{})
		defer close(release)
		init := func(ctx context.Context, _ *app.Setup) ([]app.Service, error) {
			<-ctx.Done()
			return []app.Service{&fakeService{name: "a", journal: &j, serve: func(context.Context) error {
				<-release // ignores its context: Shutdown must still be called
				return nil
			}}}, nil
		}
		codes := start(t.Context(), init, p.option(), app.WithGracePeriod(time.Second))
		synctest.Wait()
		p.signals <- syscall.SIGTERM
		require.Equal(t, 1, <-codes, "a Serve that never returns overruns the grace period")
		require.Equal(t, []string{"a shutdown"}, j.list())
		require.Equal(t, "a", p.record(t, "serve did not return within the grace period").Attributes["loam.app.service"])
	})
}

func TestRunGracePeriodCutsASlowShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		slow := &fakeService{name: "slow", shutdown: func(ctx context.Context) error {
			select {
			case <-time.After(time.Minute): // drains for a minute, past the grace period
				return nil
			case <-ctx.Done():
				return fmt.Errorf("draining: %w", ctx.Err())
			}
		}}
		fast := &fakeService{name: "fast"}
		codes := start(t.Context(), services(slow, fast), p.option(), app.WithGracePeriod(3*time.Second))
		synctest.Wait()
		stopped := time.Now()
		p.signals <- syscall.SIGTERM
		require.Equal(t, 1, <-codes)
		require.Equal(t, 3*time.Second, time.Since(stopped), "the App waits for the grace period, no longer")

		r := p.record(t, "shutdown failed")
		require.Equal(t, "slow", r.Attributes["loam.app.service"])
		require.Equal(t, "draining: context deadline exceeded", r.Attributes["exception.message"])
	})
}

func TestRunGivesUpOnAShutdownThatIgnoresItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		release := make(chan struct{})
		defer close(release)
		var j journal
		deaf := &fakeService{name: "deaf", shutdown: func(context.Context) error {
			<-release
			return nil
		}}
		init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			s.OnStop(func(ctx context.Context) error {
				j.add(fmt.Sprintf("hook with %v", ctx.Err()))
				return nil
			})
			return []app.Service{deaf}, nil
		}
		codes := start(t.Context(), init, p.option(), app.WithGracePeriod(3*time.Second))
		synctest.Wait()
		p.signals <- syscall.SIGTERM
		require.Equal(t, 1, <-codes)
		require.Equal(t, []string{"hook with context deadline exceeded"}, j.list(), "the hooks still run, after the grace period")
		require.Equal(t, "deaf", p.record(t, "shutdown did not return within the grace period").Attributes["loam.app.service"])
	})
}

func TestRunShutdownThatReturnsNilLateOverran(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		late := &fakeService{name: "late", serve: func(context.Context) error { return nil }, shutdown: func(context.Context) error {
			time.Sleep(1500 * time.Millisecond) // past the grace period, inside the wait for its error
			return nil
		}}
		require.Equal(t, 1, app.Run(t.Context(), services(late), p.option(), app.WithGracePeriod(time.Second)))
		require.Equal(t, "late", p.record(t, "shutdown overran the grace period").Attributes["loam.app.service"])
	})
}

func TestRunStopOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		var j journal
		var hookDeadline, shutdownDeadline time.Time
		flushed := func(context.Context) error { j.add("telemetry flushed"); return nil }
		telemetry := app.WithTelemetry(func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
			return app.Telemetry{}, flushed, nil
		})
		svc := &fakeService{name: "svc", journal: &j, shutdown: func(ctx context.Context) error {
			shutdownDeadline, _ = ctx.Deadline()
			return nil
		}}
		init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			for _, name := range []string{"first", "second", "third"} {
				s.OnStop(func(ctx context.Context) error {
					hookDeadline, _ = ctx.Deadline()
					j.add("hook " + name)
					return nil
				})
			}
			return []app.Service{svc}, nil
		}
		codes := start(t.Context(), init, p.option(), telemetry)
		synctest.Wait()
		p.signals <- syscall.SIGTERM
		require.Equal(t, 0, <-codes)

		events := j.list()
		require.ElementsMatch(t, []string{"svc serve returned", "svc shutdown"}, events[:2], "the Services stop first")
		require.Equal(t, []string{"hook third", "hook second", "hook first", "telemetry flushed"}, events[2:],
			"then the hooks, last registered first, then the telemetry")
		require.Equal(t, shutdownDeadline, hookDeadline, "the hooks run inside the same grace period")
	})
}
