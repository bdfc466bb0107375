// Package celcheck compiles the CEL expressions of an App's webhook match
// conditions as the API server compiles them when a configuration is
// created: the same variables (object, oldObject, namespaceObject,
// request, authorizer), the same libraries and language options, and a
// bool result. kube/webhookcel's MatchConditions option carries it to
// kube's NewWebhooks and WebhookConfigurations, so a condition the API
// server would refuse fails the App's Init, not the deployment; kube
// itself never imports it, so that a program that makes no match
// condition links no CEL.
//
// It is built on cel-go and the API server's CEL libraries
// (k8s.io/apiserver/pkg/cel and .../cel/library), never on the API
// server's compiler (.../admission/plugin/cel, .../cel/environment): those
// import the API server's process globals — feature gates, the legacy
// metrics registry, the admission machinery — which a library must not
// bring into its user's program. What the compiler declares is written
// out here instead, in env.go, and a differential test compiles a corpus
// with both and requires the same outcome for every expression.
package celcheck

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
)

// MatchConditions returns a function that compiles a match condition's
// expression and returns why the API server would refuse it, or nil. The
// environment is built on the first call, once, and belongs to the
// function: building it takes milliseconds, and most Apps never call it.
// If the environment can't be built, every call returns that error.
func MatchConditions() func(expression string) error {
	var (
		once   sync.Once
		env    *cel.Env
		envErr error
	)
	return func(expression string) error {
		once.Do(func() {
			env, envErr = newEnv(baseOptions(), variables())
			if envErr != nil {
				envErr = fmt.Errorf("building the CEL environment of match conditions: %w", envErr)
			}
		})
		if envErr != nil {
			return envErr
		}
		return compile(env, expression)
	}
}

// compile compiles expression in env as the API server validates a match
// condition: trimmed of surrounding space, and of type bool exactly. Its
// messages are the API server's.
func compile(env *cel.Env, expression string) error {
	ast, issues := env.Compile(strings.TrimSpace(expression))
	if issues != nil {
		return errors.New("compilation failed: " + issues.String())
	}
	if got := ast.OutputType(); !got.IsExactType(cel.BoolType) {
		return fmt.Errorf("must evaluate to %v but got %v", cel.BoolType, got)
	}
	return nil
}
