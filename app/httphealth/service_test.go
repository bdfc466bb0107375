package httphealth_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/log"
	"go.uber.org/goleak"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/health"
	"github.com/loam-dev/loam/app/httphealth"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// address is where the probes listen on a test Host's in-memory network.
const address = "probes.test:8081"

// running is a probes Service being served, and a client of it.
type running struct {
	t      *testing.T
	svc    *httphealth.Service
	client *http.Client
	base   string
	cancel context.CancelFunc
	served chan error
}

// serve makes a Service of checks on host and serves it until the test
// ends, when it checks that Serve returned nil.
func serve(t *testing.T, host app.Host, tel app.Telemetry, base string, settings httphealth.Settings, checks ...health.Check) *running {
	t.Helper()
	svc, err := httphealth.NewService(&app.Setup{Host: host, Telemetry: tel}, settings, checks...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	r := &running{
		t:   t,
		svc: svc,
		// A connection per probe, as the kubelet's prober does.
		client: &http.Client{Transport: &http.Transport{DialContext: host.Dial, DisableKeepAlives: true}},
		base:   base,
		cancel: cancel,
		served: make(chan error, 1),
	}
	go func() { r.served <- svc.Serve(ctx) }()
	t.Cleanup(r.stop)
	return r
}

// stop cancels Serve's context and shuts the Service down, once.
func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	require.NoError(r.t, <-r.served, "Serve returns nil when its context ends")
	require.NoError(r.t, r.svc.Shutdown(context.Background()))
}

// do sends a probe and returns its status and body.
func (r *running) do(method, path string) (int, string) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), method, r.base+path, nil)
	require.NoError(r.t, err)
	resp, err := r.client.Do(req)
	require.NoError(r.t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(r.t, err)
	return resp.StatusCode, string(body)
}

func (r *running) get(path string) (int, string) {
	r.t.Helper()
	return r.do(http.MethodGet, path)
}

// settings is the Settings of a test Host's probes.
func settings() httphealth.Settings {
	s := httphealth.DefaultSettings()
	s.Address = address
	return s
}

func TestReadinessFollowsItsMonitor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		var synced health.Flag
		r := serve(t, h.Host(), app.Telemetry{}, "http://"+address, settings(), health.Readiness(&synced).Named("synced"))
		synctest.Wait() // Serve is listening

		code, body := r.get("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "readiness check \"synced\": unhealthy\n", body)

		code, body = r.get("/livez")
		require.Equal(t, http.StatusOK, code, "a readiness check is not asked by /livez")
		require.Equal(t, "ok\n", body)

		synced.MarkHealthy()
		code, body = r.get("/readyz")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "ok\n", body)

		synced.MarkUnhealthy()
		code, _ = r.get("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
	})
}

func TestFailingChecksAreNamedWithTheirErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		var a, b health.Flag
		db := health.MonitorFunc(func(context.Context) (bool, error) {
			return true, errors.Join(errors.New("database: connection refused"), errors.New("retrying"))
		})
		r := serve(t, h.Host(), app.Telemetry{}, "http://"+address, settings(),
			health.Readiness(&a),
			health.Readiness(&b),
			health.Liveness(db),
		)
		synctest.Wait()

		code, body := r.get("/livez")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "liveness check: unhealthy: database: connection refused; retrying\n", body,
			"an error fails a check that says it is healthy, and stays on one line")

		b.MarkHealthy()
		code, body = r.get("/readyz")
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, "liveness check: unhealthy: database: connection refused; retrying\n"+
			"readiness check 1: unhealthy\n", body,
			"/readyz asks the liveness checks too, and names unnamed checks by their place")
	})
}

func TestProbePaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		r := serve(t, h.Host(), app.Telemetry{}, "http://"+address, settings())
		synctest.Wait()

		tests := []struct {
			method, path string
			code         int
		}{
			{http.MethodGet, "/readyz", http.StatusOK},
			{http.MethodGet, "/livez", http.StatusOK},
			{http.MethodHead, "/readyz", http.StatusOK},
			{http.MethodPost, "/readyz", http.StatusMethodNotAllowed},
			{http.MethodGet, "/healthz", http.StatusNotFound},
			{http.MethodGet, "/readyz/extra", http.StatusNotFound},
		}
		for _, tt := range tests {
			code, _ := r.do(tt.method, tt.path)
			require.Equal(t, tt.code, code, "%s %s", tt.method, tt.path)
		}
	})
}

func TestChangesAreLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		tel := apptest.NewTelemetry()
		defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
		var synced health.Flag
		r := serve(t, h.Host(), tel.Telemetry, "http://"+address, settings(), health.Readiness(&synced).Named("synced"))
		synctest.Wait()

		for range 3 {
			r.get("/readyz")
		}
		synced.MarkHealthy()
		for range 3 {
			r.get("/readyz")
		}

		type line struct {
			severity log.Severity
			body     string
		}
		var got []line
		for _, rec := range tel.Records() {
			require.Equal(t, "github.com/loam-dev/loam/app/httphealth", rec.InstrumentationScope().Name)
			got = append(got, line{rec.Severity(), rec.Body().AsString()})
		}
		require.Equal(t, []line{
			{log.SeverityInfo, "serving probes on " + address},
			{log.SeverityWarn, `readiness check "synced": unhealthy`},
			{log.SeverityInfo, `readiness check "synced": healthy`},
		}, got)
	})
}

func TestShutdownWaitsForProbesInFlightUntilItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		release := make(chan struct{})
		asked := make(chan struct{})
		slow := health.MonitorFunc(func(context.Context) (bool, error) {
			close(asked)
			<-release
			return true, nil
		})
		svc, err := httphealth.NewService(&app.Setup{Host: h.Host()}, settings(), health.Readiness(slow))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- svc.Serve(ctx) }()
		synctest.Wait()

		client := &http.Client{Transport: &http.Transport{DialContext: h.Dial, DisableKeepAlives: true}}
		probed := make(chan error, 1)
		go func() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+address+"/readyz", nil)
			if err != nil {
				probed <- err
				return
			}
			resp, err := client.Do(req)
			if err == nil {
				err = resp.Body.Close()
			}
			probed <- err
		}()
		<-asked

		cancel()
		require.NoError(t, <-served, "Serve returns once its context ends, leaving the probe in flight")

		start := time.Now()
		deadline, stop := context.WithTimeout(context.Background(), 3*time.Second)
		defer stop()
		err = svc.Shutdown(deadline)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "httphealth: shutting down")
		require.Equal(t, 3*time.Second, time.Since(start), "Shutdown waited for the probe until its deadline")

		close(release)
		require.Error(t, <-probed, "Shutdown closed the probe's connection")
	})
}

func TestShutdownAnswersTheProbesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		asked := make(chan struct{})
		slow := health.MonitorFunc(func(context.Context) (bool, error) {
			close(asked)
			time.Sleep(time.Second)
			return true, nil
		})
		svc, err := httphealth.NewService(&app.Setup{Host: h.Host()}, settings(), health.Readiness(slow))
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() { served <- svc.Serve(t.Context()) }()
		synctest.Wait()

		client := &http.Client{Transport: &http.Transport{DialContext: h.Dial, DisableKeepAlives: true}}
		status := make(chan int, 1)
		go func() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+address+"/readyz", nil)
			if err != nil {
				status <- 0
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				status <- 0
				return
			}
			_ = resp.Body.Close()
			status <- resp.StatusCode
		}()
		<-asked

		require.NoError(t, svc.Shutdown(context.Background()))
		require.NoError(t, <-served, "Serve returns nil after Shutdown")
		require.Equal(t, http.StatusOK, <-status, "the probe in flight was answered")
	})
}

func TestShutdownBeforeServeNeverListens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		svc, err := httphealth.NewService(&app.Setup{Host: h.Host()}, settings())
		require.NoError(t, err)
		require.NoError(t, svc.Shutdown(t.Context()))
		require.NoError(t, svc.Serve(t.Context()))

		_, err = h.Dial(t.Context(), "tcp", address)
		require.Error(t, err, "nothing listens on the address")
	})
}

func TestServeTwiceFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		svc, err := httphealth.NewService(&app.Setup{Host: h.Host()}, settings())
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() { served <- svc.Serve(t.Context()) }()
		synctest.Wait()

		require.EqualError(t, svc.Serve(t.Context()), "httphealth: Serve called twice")
		require.NoError(t, svc.Shutdown(t.Context()))
		require.NoError(t, <-served)
	})
}

func TestServeWithADoneContextReturnsNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		svc, err := httphealth.NewService(&app.Setup{Host: h.Host()}, settings())
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.NoError(t, svc.Serve(ctx))
		require.NoError(t, svc.Shutdown(t.Context()))
	})
}

func TestServeFailsWhenItCannotListen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := apptest.NewHost(t)
		taken, err := h.Listen(t.Context(), "tcp", address)
		require.NoError(t, err)
		defer func() { require.NoError(t, taken.Close()) }()

		svc, err := httphealth.NewService(&app.Setup{Host: h.Host()}, settings())
		require.NoError(t, err)
		err = svc.Serve(t.Context())
		require.ErrorContains(t, err, "httphealth: listening on "+address+": ")
		require.NoError(t, svc.Shutdown(t.Context()))
	})
}

// osNetwork is an app.Network on the machine's own loopback, which reports
// each address it listens on.
type osNetwork struct {
	listening chan net.Addr
}

func (n osNetwork) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, network, address)
	if err != nil {
		return nil, err
	}
	n.listening <- l.Addr()
	return l, nil
}

func (osNetwork) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func TestProbesOnARealListener(t *testing.T) {
	n := osNetwork{listening: make(chan net.Addr, 1)}
	var ready health.Flag
	s := httphealth.DefaultSettings()
	s.Address = "127.0.0.1:0"
	svc, err := httphealth.NewService(&app.Setup{Host: app.Host{Network: n}}, s, health.Readiness(&ready).Named("ready"))
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- svc.Serve(t.Context()) }()
	addr := <-n.listening

	r := &running{
		t:      t,
		client: &http.Client{Transport: &http.Transport{DialContext: n.Dial, DisableKeepAlives: true}},
		base:   "http://" + addr.String(),
	}
	code, body := r.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "readiness check \"ready\": unhealthy\n", body)

	ready.MarkHealthy()
	code, body = r.get("/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, svc.Shutdown(ctx))
	require.NoError(t, <-served, "Serve returns nil after Shutdown")
}

func TestNewServiceReportsEveryMistake(t *testing.T) {
	var flag health.Flag
	tests := []struct {
		name     string
		setup    *app.Setup
		settings httphealth.Settings
		checks   []health.Check
		want     []string
	}{
		{
			name:  "no Setup and no address",
			setup: nil,
			want: []string{
				"httphealth: nil Setup",
				`httphealth: Settings.Address: address is empty: set host:port, such as ":8081"`,
			},
		},
		{
			name:     "no Network",
			setup:    &app.Setup{},
			settings: httphealth.Settings{Address: ":8081"},
			want:     []string{"httphealth: the Setup's Host has no Network to listen on"},
		},
		{
			name:     "every mistake together",
			setup:    &app.Setup{},
			settings: httphealth.Settings{Address: "8081"},
			checks: []health.Check{
				health.Readiness(&flag).Named("synced"),
				health.Readiness(),
				health.Liveness(&flag).Named("synced"),
				health.Readiness(&flag).Named("synced"),
				{Monitor: &flag},
			},
			want: []string{
				"httphealth: the Setup's Host has no Network to listen on",
				`httphealth: Settings.Address: address "8081" is not host:port: address 8081: missing port in address`,
				"httphealth: checks[1]: readiness check: Monitor: no monitors, which is always healthy",
				`httphealth: checks[3]: readiness check "synced" has the name of checks[0]`,
				"httphealth: checks[4]: Kind(0) check: its Kind is Kind(0), neither KindReadiness nor KindLiveness",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, err := httphealth.NewService(tt.setup, tt.settings, tt.checks...)
			require.Nil(t, svc)
			require.EqualError(t, err, strings.Join(tt.want, "\n"))
		})
	}
}

func TestCheckAddress(t *testing.T) {
	tests := []struct {
		address string
		want    string
	}{
		{address: ":8081"},
		{address: "0.0.0.0:8081"},
		{address: "127.0.0.1:0"},
		{address: "[::1]:65535"},
		{address: "localhost:9000"},
		{address: "", want: `address is empty: set host:port, such as ":8081"`},
		{address: "8081", want: `address "8081" is not host:port: address 8081: missing port in address`},
		{address: "::1:80", want: `address "::1:80" is not host:port: address ::1:80: too many colons in address`},
		{address: ":http", want: `address ":http": port "http" is not a number from 0 to 65535`},
		{address: ":65536", want: `address ":65536": port "65536" is not a number from 0 to 65535`},
		{address: ":-1", want: `address ":-1": port "-1" is not a number from 0 to 65535`},
		{address: "host:", want: `address "host:": port "" is not a number from 0 to 65535`},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			err := httphealth.CheckAddress(tt.address)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}

func TestDefaultSettingsImposeNoPort(t *testing.T) {
	require.Empty(t, httphealth.DefaultSettings().Address)
	require.Error(t, httphealth.CheckAddress(httphealth.DefaultSettings().Address))
}
