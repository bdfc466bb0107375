package app_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

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
