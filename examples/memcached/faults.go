package memcached

import (
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

// ScenarioMember is the W3C baggage member that holds a failure scenario,
// in jsonscenario's format, on the scenario annotation.
const ScenarioMember = "acme.fault"

// faultSwitchVariable names the ConfigMap, in POD_NAMESPACE, whose key
// "switch" turns the operator's failure injection on and off
// (kube.FaultSwitch). Unset, there is no switch, and failure injection is
// on wherever the operator runs with it.
const faultSwitchVariable = "FAILURE_INJECTION_SWITCH"

// Faults returns the app.Option of the operator's failure injection:
// scenarios in ScenarioMember, read by jsonscenario, taken from the
// Memcacheds of the staging namespace and carried on to their
// Deployments. Command memcached runs with it, and deploy/ names a
// FAILURE_INJECTION_SWITCH, so a cluster's operator injects nothing until
// the ConfigMap says on.
func Faults() app.Option {
	codec, err := jsonscenario.New(ScenarioMember)
	if err != nil {
		// ScenarioMember is a baggage key, as TestFaults holds: a codec
		// that can't be made leaves fault.New a nil Decoder to report,
		// and the App exits 78.
		return app.WithFaults(fault.Settings{})
	}
	return app.WithFaults(fault.Settings{Decoder: codec})
}
