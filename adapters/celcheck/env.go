package celcheck

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Compatibility is the Kubernetes version whose CEL environment for new
// expressions this package declares: the minimum compatibility version of
// a 1.37 API server, the one kubetest runs, which compiles a new or
// changed expression only with what a 1.36 API server would also read
// back, so that a rollback keeps it valid. The differential test fails
// when the API server's compiler this module requires serves another.
const Compatibility = "1.36"

// option is one option of the environment, named for the differential
// test, which drops each in turn and requires its corpus to notice.
type option struct {
	name string
	env  cel.EnvOption
}

// baseOptions are the options of the API server's base environment
// (k8s.io/apiserver/pkg/cel/environment's baseOpts) that its
// NewExpressions environment holds at Compatibility, in its order. The
// program options beside them (cost limits and tracking, optimisation)
// act when an expression is evaluated, and the API server estimates no
// cost when it validates a match condition, so none is here.
func baseOptions() []option {
	return []option{
		{"HomogeneousAggregateLiterals", cel.HomogeneousAggregateLiterals()},
		{"EagerlyValidateDeclarations", cel.EagerlyValidateDeclarations(true)},
		{"DefaultUTCTimeZone", cel.DefaultUTCTimeZone(true)},
		{"library.URLs", library.URLs()},
		{"library.Regex", library.Regex()},
		{"CostEstimatorOptions", cel.CostEstimatorOptions(checker.PresenceTestHasCost(false))},
		// Version 1 (includes) is introduced at 1.37, after Compatibility.
		{"library.Lists(0)", library.Lists(library.ListsVersion(0))},
		{"library.Authz", library.Authz()},
		{"CrossTypeNumericComparisons", cel.CrossTypeNumericComparisons(true)},
		{"OptionalTypes", cel.OptionalTypes()},
		{"library.Quantity", library.Quantity()},
		// One cel.ASTValidators with the four, at the API server.
		{"ValidateDurationLiterals", cel.ASTValidators(cel.ValidateDurationLiterals())},
		{"ValidateTimestampLiterals", cel.ASTValidators(cel.ValidateTimestampLiterals())},
		{"ValidateRegexLiterals", cel.ASTValidators(cel.ValidateRegexLiterals())},
		{"ValidateHomogeneousAggregateLiterals", cel.ASTValidators(cel.ValidateHomogeneousAggregateLiterals())},
		{"ext.Strings(2)", ext.Strings(ext.StringsVersion(2))},
		{"ext.Sets", ext.Sets()},
		{"library.IP", library.IP()},
		{"library.CIDR", library.CIDR()},
		{"library.Format", library.Format()},
		{"library.AuthzSelectors", library.AuthzSelectors()},
		{"ext.TwoVarComprehensions", ext.TwoVarComprehensions()},
		{"library.SemverLib(1)", library.SemverLib(library.SemverVersion(1))},
		{"ext.Lists(3)", ext.Lists(ext.ListsVersion(3))},
	}
}

// Names of the variables the API server declares for a match condition
// (k8s.io/apiserver/pkg/admission/plugin/cel's createEnvForOpts, with an
// authorizer and without params).
const (
	objectVar                    = "object"
	oldObjectVar                 = "oldObject"
	namespaceVar                 = "namespaceObject"
	requestVar                   = "request"
	authorizerVar                = "authorizer"
	requestResourceAuthorizerVar = "authorizer.requestResource"
)

// variables declares the variables a match condition reads.
func variables() []option {
	return []option{
		{objectVar, cel.Variable(objectVar, cel.DynType)},
		{oldObjectVar, cel.Variable(oldObjectVar, cel.DynType)},
		{namespaceVar, cel.Variable(namespaceVar, namespaceType().CelType())},
		{requestVar, cel.Variable(requestVar, requestType().CelType())},
		{authorizerVar, cel.Variable(authorizerVar, library.AuthorizerType)},
		{requestResourceAuthorizerVar, cel.Variable(requestResourceAuthorizerVar, library.ResourceCheckType)},
	}
}

// newEnv builds the environment in the API server's two steps: the base
// environment, then the variables with the types of request and
// namespaceObject, whose fields may be named as CEL's reserved words
// (request.namespace), as from 1.31 on.
func newEnv(base, vars []option) (*cel.Env, error) {
	env, err := cel.NewEnv(envOptions(base)...)
	if err != nil {
		return nil, err
	}
	provider := apiservercel.NewDeclTypeProvider(namespaceType(), requestType())
	provider.SetRecognizeKeywordAsFieldName(true)
	types, err := provider.EnvOptions(env.CELTypeProvider())
	if err != nil {
		return nil, err
	}
	return env.Extend(append(envOptions(vars), types...)...)
}

func envOptions(opts []option) []cel.EnvOption {
	out := make([]cel.EnvOption, 0, len(opts))
	for _, o := range opts {
		out = append(out, o.env)
	}
	return out
}
