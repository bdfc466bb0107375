package app_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
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
			name: "a nil host telemetry builder",
			init: services(),
			opts: []app.Option{app.WithHostTelemetry(nil)},
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

func TestRunProcessListsItsEnvironment(t *testing.T) {
	tests := []struct {
		name string
		opts []app.Option
		want []string
	}{
		{name: "the default Process has none", want: nil},
		{name: "WithProcess with no Environment has none", opts: []app.Option{app.WithProcess(app.Process{})}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			listed := false
			init := func(_ context.Context, s *app.Setup) ([]app.Service, error) {
				var l app.EnvironmentLister
				if l, listed = s.Process.Environment.(app.EnvironmentLister); listed {
					names = l.Names()
				}
				return nil, nil
			}
			require.Equal(t, 0, app.Run(t.Context(), init, tt.opts...))
			require.True(t, listed, "an Environment Run fills in lists its names")
			require.Equal(t, tt.want, names)
		})
	}
}
