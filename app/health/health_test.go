package health_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app/health"
)

// fixed is a Monitor that always answers the same, and counts its calls.
type fixed struct {
	healthy bool
	err     error
	calls   int
}

func (f *fixed) Healthy(context.Context) (bool, error) {
	f.calls++
	return f.healthy, f.err
}

var errBroken = errors.New("broken")

func healthyM() *fixed       { return &fixed{healthy: true} }
func unhealthyM() *fixed     { return &fixed{} }
func failing(e error) *fixed { return &fixed{healthy: true, err: e} } // an error wins over true

func TestFlag(t *testing.T) {
	var f health.Flag
	ok, err := f.Healthy(t.Context())
	require.NoError(t, err)
	require.False(t, ok, "the zero Flag is unhealthy")

	f.MarkHealthy()
	ok, err = f.Healthy(t.Context())
	require.NoError(t, err)
	require.True(t, ok)

	f.MarkUnhealthy()
	ok, err = f.Healthy(t.Context())
	require.NoError(t, err)
	require.False(t, ok)

	var nilFlag *health.Flag
	ok, err = nilFlag.Healthy(t.Context())
	require.EqualError(t, err, "nil Monitor")
	require.False(t, ok)
}

func TestFlagIsSafeForConcurrentUse(t *testing.T) {
	var f health.Flag
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 100 {
				if i%2 == 0 {
					f.MarkHealthy()
				} else {
					f.MarkUnhealthy()
				}
				_, err := f.Healthy(context.Background())
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	f.MarkHealthy()
	ok, err := f.Healthy(t.Context())
	require.NoError(t, err)
	require.True(t, ok)
}

func TestMonitorFunc(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, true)
	ok, err := health.MonitorFunc(func(ctx context.Context) (bool, error) {
		v, _ := ctx.Value(key{}).(bool)
		return v, nil
	}).Healthy(ctx)
	require.NoError(t, err)
	require.True(t, ok, "the function gets Healthy's context")

	ok, err = health.MonitorFunc(nil).Healthy(ctx)
	require.EqualError(t, err, "nil Monitor")
	require.False(t, ok)
}

func TestAllAndAny(t *testing.T) {
	errOther := errors.New("other")
	tests := []struct {
		name     string
		monitors []health.Monitor
		all      bool
		allErr   string
		any      bool
		anyErr   string
	}{
		{name: "none", all: true, any: false},
		{name: "one healthy", monitors: []health.Monitor{healthyM()}, all: true, any: true},
		{name: "one unhealthy", monitors: []health.Monitor{unhealthyM()}, all: false, any: false},
		{
			name:     "healthy and unhealthy",
			monitors: []health.Monitor{healthyM(), unhealthyM()},
			all:      false, any: true,
		},
		{
			name:     "an error is unhealthy, whatever the bool",
			monitors: []health.Monitor{failing(errBroken)},
			all:      false, allErr: "broken",
			any: false, anyErr: "broken",
		},
		{
			name:     "every error is reported",
			monitors: []health.Monitor{failing(errBroken), healthyM(), failing(errOther)},
			all:      false, allErr: "broken\nother",
			any: true,
		},
		{
			name:     "nil is unhealthy",
			monitors: []health.Monitor{nil, healthyM()},
			all:      false, allErr: "nil Monitor",
			any: true,
		},
		{
			name:     "nested",
			monitors: []health.Monitor{health.Any(unhealthyM(), healthyM()), health.All(healthyM(), healthyM())},
			all:      true, any: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := health.All(tt.monitors...).Healthy(t.Context())
			require.Equal(t, tt.all, ok, "All")
			if tt.allErr == "" {
				require.NoError(t, err, "All")
			} else {
				require.EqualError(t, err, tt.allErr, "All")
			}

			ok, err = health.Any(tt.monitors...).Healthy(t.Context())
			require.Equal(t, tt.any, ok, "Any")
			if tt.anyErr == "" {
				require.NoError(t, err, "Any")
			} else {
				require.EqualError(t, err, tt.anyErr, "Any")
			}
		})
	}
}

func TestAllAsksEveryMonitorAndAnyStopsAtTheFirstHealthy(t *testing.T) {
	first, second, third := unhealthyM(), healthyM(), healthyM()
	_, err := health.All(first, second, third).Healthy(t.Context())
	require.NoError(t, err)
	require.Equal(t, []int{1, 1, 1}, []int{first.calls, second.calls, third.calls})

	_, err = health.Any(first, second, third).Healthy(t.Context())
	require.NoError(t, err)
	require.Equal(t, []int{2, 2, 1}, []int{first.calls, second.calls, third.calls})
}

func TestAllAndAnyKeepTheirOwnMonitors(t *testing.T) {
	monitors := []health.Monitor{healthyM()}
	a := health.All(monitors...)
	monitors[0] = unhealthyM()
	ok, err := a.Healthy(t.Context())
	require.NoError(t, err)
	require.True(t, ok, "All copied its monitors")
}

func TestReadinessAndLiveness(t *testing.T) {
	var f health.Flag
	r := health.Readiness(&f)
	require.Equal(t, health.KindReadiness, r.Kind)
	require.Empty(t, r.Name)
	require.Same(t, &f, r.Monitor, "one monitor is used as it is")

	l := health.Liveness(healthyM(), unhealthyM()).Named("server")
	require.Equal(t, health.KindLiveness, l.Kind)
	require.Equal(t, "server", l.Name)
	ok, err := l.Monitor.Healthy(t.Context())
	require.NoError(t, err)
	require.False(t, ok, "many monitors must all be healthy")

	require.Equal(t, `liveness check "server"`, l.String())
	require.Equal(t, "readiness check", r.String())
	require.Empty(t, health.Readiness(&f).Named("a").Named("").Name, "Named returns a copy")
	require.Empty(t, r.Name, "Named left the original alone")
}

func TestKindString(t *testing.T) {
	require.Equal(t, "readiness", health.KindReadiness.String())
	require.Equal(t, "liveness", health.KindLiveness.String())
	require.Equal(t, "Kind(0)", health.Kind(0).String())
	require.Equal(t, "Kind(9)", health.Kind(9).String())
}

func TestCheckValidate(t *testing.T) {
	var nilFlag *health.Flag
	tests := []struct {
		name  string
		check health.Check
		want  string
	}{
		{name: "readiness", check: health.Readiness(healthyM())},
		{name: "liveness of many, named", check: health.Liveness(healthyM(), health.Any(healthyM())).Named("x")},
		{name: "a Monitor of its own type", check: health.Check{Kind: health.KindLiveness, Monitor: healthyM()}},
		{
			name:  "no monitors",
			check: health.Readiness(),
			want:  "readiness check: Monitor: no monitors, which is always healthy",
		},
		{
			name:  "a nil monitor",
			check: health.Liveness(nil).Named("n"),
			want:  `liveness check "n": Monitor: nil Monitor`,
		},
		{
			name:  "nil monitors deep inside",
			check: health.Readiness(healthyM(), health.Any(nilFlag, health.MonitorFunc(nil)), health.Any()),
			want: "readiness check: Monitor[1][0]: nil Monitor (a nil *Flag)\n" +
				"readiness check: Monitor[1][1]: nil Monitor (a nil MonitorFunc)\n" +
				"readiness check: Monitor[2]: Any of no monitors, which is never healthy",
		},
		{
			name:  "every mistake at once",
			check: health.Check{Name: "a\nb"},
			want: "Kind(0) check \"a\\nb\": its Kind is Kind(0), neither KindReadiness nor KindLiveness\n" +
				"Kind(0) check \"a\\nb\": its Name \"a\\nb\" holds a control character\n" +
				"Kind(0) check \"a\\nb\": Monitor: nil Monitor",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.check.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}
