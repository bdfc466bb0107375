package app_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
)

// untilStopped is a Service that serves until the App stops.
type untilStopped struct{}

func (untilStopped) Serve(ctx context.Context) error { <-ctx.Done(); return nil }
func (untilStopped) Shutdown(context.Context) error  { return nil }

// TestFaultSwitch: the kill switch's file is read before Init, and then
// once a SwitchPeriod: "on" turns failure injection on, "off" off, and a
// file that holds anything else, or can't be read, off, each change with
// a record saying why; a change takes effect within one period.
func TestFaultSwitch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		host := apptest.NewHost(t)
		host.WriteFile("switch", []byte("on\n"))
		var faults *fault.Injector
		a := apptest.Start(t, func(_ context.Context, s *app.Setup) ([]app.Service, error) {
			faults = s.Faults
			require.True(t, faults.On(), "the switch is read before Init")
			return []app.Service{untilStopped{}}, nil
		}, apptest.WithHost(host), apptest.WithAppOptions(app.WithFaults(fault.Settings{Decoder: testDecoder{}, Switch: host.Path("switch")})))
		a.Setup()

		for _, step := range []struct {
			write string // "" removes the file
			on    bool
		}{
			{"off", false},
			{"on", true},
			{"maybe", false},
			{"on", true},
			{"", false},
			{" on \n", true},
		} {
			if step.write == "" {
				host.RemoveFile("switch")
			} else {
				host.WriteFile("switch", []byte(step.write))
			}
			require.Equal(t, !step.on, faults.On(), "%q: nothing changes before the next read", step.write)
			time.Sleep(fault.SwitchPeriod)
			synctest.Wait()
			require.Equal(t, step.on, faults.On(), "%q, one period later", step.write)
		}
		require.Equal(t, 0, a.Stop())

		var said []string
		for _, r := range a.Telemetry().Records() {
			if body := r.Body().AsString(); strings.HasPrefix(body, "failure injection is") {
				line := r.Severity().String() + " " + body
				if r.Severity() == log.SeverityWarn {
					r.WalkAttributes(func(kv attribute.KeyValue) bool {
						if kv.Key == "exception.message" {
							line += ": " + strings.TrimPrefix(kv.Value.AsString(), "switch "+host.Path("switch")+": ")
						}
						return true
					})
				}
				said = append(said, line)
			}
		}
		require.Equal(t, []string{
			"INFO failure injection is on",
			"INFO failure injection is off",
			"INFO failure injection is on",
			`WARN failure injection is off: its switch can't be read: it holds neither on nor off: "maybe"`,
			"INFO failure injection is on",
			"WARN failure injection is off: its switch can't be read: open " + host.Path("switch") + ": no such file or directory",
			"INFO failure injection is on",
		}, said)
	})
}
