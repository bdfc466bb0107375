// Package celcheck compiles the CEL expressions of an App's webhook match
// conditions with the API server's own compiler, from k8s.io/apiserver,
// as the API server compiles them when a configuration is created: the
// same variables (object, oldObject, request, authorizer), the same
// libraries, and a bool result. kube calls it at NewWebhooks and
// WebhookConfigurations, so a condition the API server would refuse fails
// the App's Init, not the deployment.
package celcheck

import (
	"errors"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// MatchConditions returns a function that compiles a match condition's
// expression and returns why the API server would refuse it, or nil. The
// compiler's environment is built on the first call, once, and belongs
// to the function: building it takes milliseconds, and most Apps never
// call it.
func MatchConditions() func(expression string) error {
	var (
		once     sync.Once
		compiler plugincel.Compiler
	)
	return func(expression string) error {
		once.Do(func() {
			compiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
		})
		// As the API server's validation of a new configuration: the
		// stateless compiler, with the authorizer and no params, and the
		// environment of new expressions.
		r := compiler.CompileCELExpression(condition(strings.TrimSpace(expression)),
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
		if r.Error != nil {
			return errors.New(r.Error.Detail)
		}
		return nil
	}
}

// condition is a match condition's expression, as the compiler reads it:
// matchconditions.MatchCondition's, without importing the admission
// plugin's machinery for its two methods.
type condition string

// GetExpression returns the expression.
func (c condition) GetExpression() string { return string(c) }

// ReturnTypes returns bool, the one type a match condition may have.
func (c condition) ReturnTypes() []*cel.Type { return []*cel.Type{cel.BoolType} }
