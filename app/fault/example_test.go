package fault_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

// An injection point of the App's own, in front of a call to a payment
// provider.
func ExampleInjector_Inject() {
	codec, err := jsonscenario.New("acme.fault")
	if err != nil {
		fmt.Println(err)
		return
	}
	faults, err := fault.New(fault.Settings{Decoder: codec})
	if err != nil {
		fmt.Println(err)
		return
	}

	charge := func(ctx context.Context) error {
		if err := faults.Inject(ctx, "payments:charge"); err != nil {
			return fmt.Errorf("charging: %w", err)
		}
		return nil // the real call goes here
	}

	fmt.Println(charge(context.Background()))

	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: []fit.Rule{
		{Point: "payments:*", Fault: fit.Fault{Abort: true}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = charge(ctx)
	var injected *fault.InjectedError
	fmt.Println(err, errors.As(err, &injected))
	// Output:
	// <nil>
	// charging: fault: injected abort at point "payments:charge" true
}
