package jsonscenario_test

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/baggage"

	"github.com/loam-dev/loam/app/fault/fit"
	"github.com/loam-dev/loam/app/fault/jsonscenario"
)

// The value of a Kubernetes object's annotation that aborts every apply of
// a Deployment, as the tool that runs the experiment writes it.
func Example_annotation() {
	codec, err := jsonscenario.New("acme.fault")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, err := fit.ContextWithScenario(context.Background(), codec, fit.Scenario{Rules: []fit.Rule{
		{Point: "kube:deployments.apps:patch", Fault: fit.Fault{Abort: true}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(baggage.FromContext(ctx).String())
	// Output:
	// acme.fault={%22rules%22:[{%22point%22:%22kube:deployments.apps:patch%22%2C%22abort%22:true}]}
}
