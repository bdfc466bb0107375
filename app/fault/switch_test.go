package fault_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/app/fault"
)

func TestSwitchWord(t *testing.T) {
	for _, tc := range []struct {
		text string
		on   bool
		err  string
	}{
		{"on", true, ""},
		{" on\n", true, ""},
		{"off", false, ""},
		{"\toff \n", false, ""},
		{"", false, `it holds neither on nor off: ""`},
		{"On", false, `it holds neither on nor off: "On"`},
		{"on off", false, `it holds neither on nor off: "on off"`},
		{strings.Repeat(" ", fault.MaxSwitchLength) + "on", false, "longer than 64 bytes: it holds on or off"},
	} {
		on, err := fault.SwitchWord(tc.text)
		require.Equal(t, tc.on, on, "%q", tc.text)
		if tc.err == "" {
			require.NoError(t, err, "%q", tc.text)
			continue
		}
		require.EqualError(t, err, tc.err)
		if strings.HasPrefix(tc.err, "it holds") {
			require.ErrorIs(t, err, fault.ErrSwitchWord)
		}
	}
}

// TestSwitch: Set turns the Injector on and off as the text says, off for
// an error or a text that is neither, and records each change of state,
// or of why it is off, once, with the Switch's attributes.
func TestSwitch(t *testing.T) {
	tel := apptest.NewTelemetry()
	i := injector(t, nil)
	sw := fault.NewSwitch(i, tel.LoggerProvider.Logger("test"), fault.SwitchKey.String("configmap ns/x, key switch"))
	gone := errors.New("configmap ns/x: not found")
	for _, step := range []struct {
		text string
		err  error
		on   bool
	}{
		{"on", nil, true},
		{" on\n", nil, true},
		{"off", nil, false},
		{"off", nil, false},
		{"maybe", nil, false},
		{"maybe", nil, false},
		{"on", gone, false},
		{"", gone, false},
		{"on", nil, true},
	} {
		sw.Set(t.Context(), step.text, step.err)
		require.Equal(t, step.on, i.On(), "%q %v", step.text, step.err)
	}

	var said []string
	for _, r := range tel.Records() {
		line := r.Severity().String() + " " + r.Body().AsString()
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			switch kv.Key {
			case "exception.message":
				line += ": " + kv.Value.AsString()
			case fault.SwitchKey:
				require.Equal(t, "configmap ns/x, key switch", kv.Value.AsString())
			}
			return true
		})
		said = append(said, line)
	}
	require.Equal(t, []string{
		"INFO " + fault.SwitchOnBody,
		"INFO " + fault.SwitchOffBody,
		"WARN " + fault.SwitchUnreadBody + `: it holds neither on nor off: "maybe"`,
		"WARN " + fault.SwitchUnreadBody + ": configmap ns/x: not found",
		"INFO " + fault.SwitchOnBody,
	}, said)
}

// TestSwitch_of_an_inert_Injector_changes_nothing: an App without
// failure injection has nothing to turn on.
func TestSwitch_of_an_inert_Injector_changes_nothing(t *testing.T) {
	i := fault.Inert()
	fault.NewSwitch(i, nil).Set(t.Context(), "on", nil)
	require.False(t, i.On())
}

// TestOnChange: each change of SetOn is told to every function OnChange
// registered, once, with the new state, until it is stopped; setting the
// state it has already tells nothing.
func TestOnChange(t *testing.T) {
	i := injector(t, nil)
	var a, b []bool
	stopA := i.OnChange(func(on bool) { a = append(a, on) })
	stopB := i.OnChange(func(on bool) { b = append(b, on) })
	i.SetOn(true) // on already
	i.SetOn(false)
	i.SetOn(false)
	stopB()
	i.SetOn(true)
	stopA()
	stopA()
	i.SetOn(false)
	require.Equal(t, []bool{false, true}, a)
	require.Equal(t, []bool{false}, b)

	inert := fault.Inert()
	called := false
	inert.OnChange(func(bool) { called = true })()
	inert.SetOn(false)
	require.False(t, called)
}
