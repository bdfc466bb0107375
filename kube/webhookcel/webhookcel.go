// Package webhookcel gives a kube Hook its matchConditions: CEL
// expressions the API server evaluates before it calls the webhook.
//
// It is a package of its own, not a function of kube, because compiling
// CEL links cel-go and the API server's CEL libraries, whose package
// initialisation costs every program that links them about a megabyte
// of allocations and a tenth of its memory at start (see
// benchmarks/cmd/initcost). An operator that imports kube alone links
// none of it; one that imports webhookcel does, and gets each
// expression compiled before it is deployed.
package webhookcel

import (
	"github.com/loam-dev/loam/adapters/celcheck"
	"github.com/loam-dev/loam/domain/webhookconfig"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/internal/hookopt"
)

// MatchConditions sets the webhook's matchConditions: the API server calls
// the webhook only for the requests on which every condition is true,
// such as !(request.userInfo.username == 'system:...:my-operator') to
// leave out the App's own writes. kube's NewWebhooks and
// WebhookConfigurations compile each expression as the API server does
// (adapters/celcheck), with the rest of the Hooks' mistakes, and report
// one that doesn't compile or isn't a bool, a missing, malformed or
// repeated name, and more than kube.MaxMatchConditions conditions. Each
// call of theirs builds the CEL environment anew, once for the option,
// and drops it when it returns.
func MatchConditions(conds ...kube.MatchCondition) kube.HookOption {
	cs := make([]webhookconfig.Condition, len(conds))
	for i, c := range conds {
		cs[i] = webhookconfig.Condition(c)
	}
	return hookopt.New(webhookconfig.Option{
		Kind: webhookconfig.MatchConditions, Conditions: cs,
		Compiler: func() webhookconfig.Check { return celcheck.MatchConditions() },
	})
}
