package app_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

func TestRunExitCodes(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		init app.Init
		// opts are added after the test Process's.
		opts []app.Option
		want int
		// body is the runtime's record the run must log; "" for none.
		body string
	}{
		{
			name: "no services ends after init",
			init: services(),
			want: 0,
		},
		{
			name: "every serve returning nil",
			init: services(
				&fakeService{name: "a", serve: func(context.Context) error { return nil }},
				&fakeService{name: "b", serve: func(context.Context) error { return nil }},
			),
			want: 0,
		},
		{
			name: "init fails",
			init: func(context.Context, *app.Setup) ([]app.Service, error) { return nil, boom },
			want: 78,
			body: "init failed",
		},
		{
			name: "init panics",
			init: func(context.Context, *app.Setup) ([]app.Service, error) { panic("init bug") },
			want: 1,
			body: "init panicked",
		},
		{
			name: "init returns a nil service",
			init: services(&fakeService{name: "a"}, nil),
			want: 1,
			body: "init failed",
		},
		{
			name: "a serve fails",
			init: services(&fakeService{name: "a", serve: func(context.Context) error { return boom }}, &fakeService{name: "b"}),
			want: 1,
			body: "service failed",
		},
		{
			name: "a serve panics",
			init: services(&fakeService{name: "a", serve: func(context.Context) error { panic("serve bug") }}, &fakeService{name: "b"}),
			want: 1,
			body: "service panicked",
		},
		{
			name: "a shutdown fails",
			init: services(&fakeService{name: "a", serve: func(context.Context) error { return nil }, shutdown: func(context.Context) error { return boom }}),
			want: 1,
			body: "shutdown failed",
		},
		{
			name: "a shutdown panics",
			init: services(&fakeService{name: "a", serve: func(context.Context) error { return nil }, shutdown: func(context.Context) error { panic("shutdown bug") }}),
			want: 1,
			body: "shutdown panicked",
		},
		{
			name: "a stop hook fails",
			init: func(_ context.Context, s *app.Setup) ([]app.Service, error) {
				s.OnStop(func(context.Context) error { return boom })
				return nil, nil
			},
			want: 1,
			body: "stop hook failed",
		},
		{
			name: "a stop hook panics",
			init: func(_ context.Context, s *app.Setup) ([]app.Service, error) {
				s.OnStop(func(context.Context) error { panic("hook bug") })
				return nil, nil
			},
			want: 1,
			body: "stop hook panicked",
		},
		{
			name: "a nil stop hook",
			init: func(_ context.Context, s *app.Setup) ([]app.Service, error) {
				s.OnStop(nil)
				return nil, nil
			},
			want: 1,
			body: "stop hook failed",
		},
		{
			name: "a negative grace period",
			init: services(),
			opts: []app.Option{app.WithGracePeriod(-time.Second)},
			want: 78,
		},
		{
			name: "a nil telemetry builder",
			init: services(),
			opts: []app.Option{app.WithTelemetry(nil)},
			want: 78,
		},
		{
			name: "a nil init",
			want: 78,
		},
		{
			name: "a telemetry builder that fails",
			init: services(),
			opts: []app.Option{app.WithTelemetry(func(context.Context, app.Process) (app.Telemetry, func(context.Context) error, error) {
				return app.Telemetry{}, nil, boom
			})},
			want: 78,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestProcess(nil)
				code := app.Run(t.Context(), tt.init, append([]app.Option{p.option()}, tt.opts...)...)
				require.Equal(t, tt.want, code, "stderr:\n%s", p.stderr.String())
				if tt.body != "" {
					r := p.record(t, tt.body)
					require.Equal(t, "ERROR", r.Severity)
					require.Equal(t, "github.com/loam-dev/loam/app", r.Scope)
				}
				if tt.want == 0 {
					records, plain := p.logLines(t)
					require.Empty(t, plain)
					for _, r := range records {
						require.NotEqual(t, "ERROR", r.Severity, "a clean run logs no error: %v", r)
					}
				}
			})
		})
	}
}

func TestRunPrintsInitErrorToStderr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		hookRan := false
		init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			// What Init opened before it failed is still closed.
			s.OnStop(func(context.Context) error { hookRan = true; return nil })
			return nil, errors.Join(
				errors.New("config CONTROLLER_NAME: not found"),
				errors.New("config POD_NAMESPACE: not found"),
				errors.New("config POD_NAME: not found"),
			)
		}
		require.Equal(t, 78, app.Run(t.Context(), init, p.option()))
		require.True(t, hookRan)

		_, plain := p.logLines(t)
		require.Equal(t, []string{
			"init: config CONTROLLER_NAME: not found",
			"config POD_NAMESPACE: not found",
			"config POD_NAME: not found",
		}, plain)
		r := p.record(t, "init failed")
		require.Equal(t, "config CONTROLLER_NAME: not found\nconfig POD_NAMESPACE: not found\nconfig POD_NAME: not found", r.Attributes["exception.message"])
	})
}

func TestRunServeFailureShutsTheOthersDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		var j journal
		failing := &fakeService{name: "leader", journal: &j, serve: func(context.Context) error {
			return errors.New("lost the lease")
		}}
		other := &fakeService{name: "probes", journal: &j}
		require.Equal(t, 1, app.Run(t.Context(), services(failing, other), p.option()))

		require.Contains(t, j.list(), "probes serve returned")
		require.Contains(t, j.list(), "probes shutdown")
		r := p.record(t, "service failed")
		require.Equal(t, "leader", r.Attributes["loam.app.service"])
		require.Equal(t, "lost the lease", r.Attributes["exception.message"])
	})
}

// unnamed is a Service with no String: the runtime names it by its type.
type unnamed struct{}

func (unnamed) Serve(context.Context) error    { return errors.New("no CRD") }
func (unnamed) Shutdown(context.Context) error { return nil }

func TestRunNamesAServiceByItsType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		require.Equal(t, 1, app.Run(t.Context(), services(unnamed{}), p.option()))
		require.Equal(t, "app_test.unnamed", p.record(t, "service failed").Attributes["loam.app.service"])
	})
}

func TestRunServePanicIsLoggedWithItsStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		var j journal
		panicky := &fakeService{name: "panicky", serve: func(context.Context) error { panicInServe(); return nil }}
		other := &fakeService{name: "other", journal: &j}
		require.Equal(t, 1, app.Run(t.Context(), services(panicky, other), p.option()))

		r := p.record(t, "service panicked")
		require.Equal(t, "panicky", r.Attributes["loam.app.service"])
		require.Equal(t, "string", r.Attributes["exception.type"])
		require.Contains(t, r.Attributes["exception.message"], "index out of reach")
		require.Contains(t, r.Attributes["exception.stacktrace"], "app_test.panicInServe")
		require.Contains(t, j.list(), "other shutdown", "the other Services still stop")
	})
}

func panicInServe() { panic("index out of reach") }

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

func TestRunAMinutePassesInstantly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		sleeper := &fakeService{name: "sleeper", serve: func(context.Context) error {
			time.Sleep(time.Minute)
			return nil
		}}
		began := time.Now()
		require.Equal(t, 0, app.Run(t.Context(), services(sleeper), p.option()))
		require.Equal(t, time.Minute, time.Since(began))
	})
}

func TestRunDoesNotSeeTheRealProcess(t *testing.T) {
	t.Setenv("LOAM_APP_TEST_VARIABLE", "set in the real environment")
	var seen app.Process
	var lookedUp bool
	var dialErr, listenErr, openErr error
	init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
		seen = s.Process
		_, lookedUp = s.Process.Environment.LookupEnv("LOAM_APP_TEST_VARIABLE")
		_, dialErr = s.Host.Dial(ctx, "tcp", "127.0.0.1:1")
		_, listenErr = s.Host.Listen(ctx, "tcp", "127.0.0.1:0")
		_, openErr = s.Host.FS.Open("/etc/hostname")
		return nil, nil
	}
	require.Equal(t, 0, app.Run(t.Context(), init))

	require.False(t, lookedUp, "Run's default Process has no environment")
	require.Empty(t, seen.Args)
	require.Nil(t, seen.Signals)
	for _, err := range []error{dialErr, listenErr, openErr} {
		require.ErrorContains(t, err, "app.WithHost", "Run's default Host reaches nothing")
	}
}

func TestRunWithHostAndProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(map[string]string{"NAME": "memcached"})
		host := app.Host{FS: testFS{}}
		var name string
		var fsErr, dialErr error
		init := func(ctx context.Context, s *app.Setup) ([]app.Service, error) {
			name, _ = s.Process.Environment.LookupEnv("NAME")
			_, fsErr = s.Host.FS.Open("token")
			_, dialErr = s.Host.Dial(ctx, "tcp", "api:443")
			_, _ = fmt.Fprint(s.Process.Stdout, "hello")
			return nil, nil
		}
		require.Equal(t, 0, app.Run(t.Context(), init, p.option(), app.WithHost(host)))
		require.Equal(t, "memcached", name)
		require.ErrorIs(t, fsErr, errTestFS, "the Host's own FS")
		require.ErrorContains(t, dialErr, "app.WithHost", "a Host with no Network refuses to dial")
		require.Equal(t, "hello", p.stdout.String())
	})
}

var errTestFS = errors.New("test FS")

type testFS struct{}

func (testFS) Open(string) (fs.File, error) { return nil, errTestFS }

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

func TestRunStderrIsShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestProcess(nil)
		init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			_, _ = fmt.Fprintln(s.Process.Stderr, "written by the App")
			return nil, errors.New("bad")
		}
		require.Equal(t, 78, app.Run(t.Context(), init, p.option()))
		require.True(t, strings.HasPrefix(p.stderr.String(), "written by the App\ninit: bad\n{"), p.stderr.String())
	})
}
