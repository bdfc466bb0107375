package celcheck

// This file alone imports the API server's compiler: a test binary may
// carry its process globals, the library may not.

import (
	"slices"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/stretchr/testify/require"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// corpus is what the differential test compiles both ways. ok says what
// the API server does with each, so that a case proves what it is meant
// to: a library a valid expression needs, a field a wrong one misspells.
var corpus = []struct {
	expression string
	ok         bool
}{
	// The variables, and request's typed fields.
	{"has(object.metadata.labels) && 'app' in object.metadata.labels", true},
	{"oldObject == null || object.spec != oldObject.spec", true},
	{"request.userInfo.username != 'system:serviceaccount:memcached-system:operator'", true},
	{"'system:masters' in request.userInfo.groups && request.userInfo.uid != ''", true},
	{"request.userInfo.extra['scopes'].exists(s, s == 'admin')", true},
	{"request.kind.group == 'cache.example.com' && request.kind.version == 'v1' && request.kind.kind == 'Memcached'", true},
	{"request.resource.resource == 'memcacheds' && request.subResource == ''", true},
	{"request.requestKind.kind == request.kind.kind && request.requestResource.group == ''", true},
	{"request.requestSubResource == 'status'", true},
	{"request.name.startsWith('mc-') && request.operation in ['CREATE', 'UPDATE']", true},
	{"request.namespace == 'default'", true}, // a reserved word as a field name
	{"request.dryRun", true},
	{"request.options == null || has(request.options.fieldManager)", true},
	{"namespaceObject.metadata.labels['team'] == 'a' && namespaceObject.status.phase == 'Active'", true},
	{"namespaceObject.status.conditions.all(c, c.lastTransitionTime < timestamp('2030-01-01T00:00:00Z'))", true},
	{"request.foo == 'x'", false},
	{"request.userInfo.name == 'x'", false},
	{"request.uid == 'x'", false},
	{"request.object == null", false},
	{"namespaceObject.metadata.managedFields.size() == 0", false},
	{"params.x == 1", false},
	{"variables.x == 1", false},
	{"self == object", false},
	// The result's type.
	{"true", true},
	{"object.metadata.name", false},
	{"request.name", false},
	{"object.spec.replicas", false},
	{"1", false},
	{"null", false},
	{"optional.of(true)", false},
	// Syntax.
	{"object.metadata.name ==", false},
	{"(", false},
	{"'unterminated", false},
	{"", false},
	{"object.metadata.name = 'x'", false},
	// The base libraries and options.
	{"url('https://example.com/x').getHost() == 'example.com'", true},             // library.URLs
	{"isURL('https://example.com')", true},                                        // library.URLs
	{"object.metadata.name.find('[0-9]+') != ''", true},                           // library.Regex
	{"object.metadata.name.findAll('[0-9]').size() > 1", true},                    // library.Regex
	{"[1, 2, 3].isSorted() && [1, 2].sum() == 3 && [3, 4].indexOf(4) == 1", true}, // library.Lists(0)
	{"[1, 2].includes(2)", false},                                                 // library.Lists(1), from 1.37
	{"authorizer.group('').resource('pods').check('get').allowed()", true},        // library.Authz
	{"authorizer.requestResource.check('update').allowed()", true},                // library.Authz, the variable
	{"authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('get').allowed()", true},
	{"authorizer.group('').resource('pods').fieldSelector('spec.nodeName=a').labelSelector('x=y').check('list').allowed()", true}, // library.AuthzSelectors
	{"1 < 2.0", true}, // CrossTypeNumericComparisons
	{"object.?spec.?replicas.orValue(1) > 0", true},                            // OptionalTypes
	{"optional.none().hasValue() == false", true},                              // OptionalTypes
	{"quantity('1Gi').isGreaterThan(quantity('1Mi'))", true},                   // library.Quantity
	{"isQuantity('1Gi') && quantity('1').asInteger() == 1", true},              // library.Quantity
	{"duration('1h') > duration('1m')", true},                                  // valid literals
	{"duration('1x') > duration('1m')", false},                                 // ASTValidators: a duration literal
	{"timestamp('yesterday') < timestamp('2030-01-01T00:00:00Z')", false},      // ASTValidators: a timestamp literal
	{"object.metadata.name.matches('[')", false},                               // ASTValidators: a regex literal
	{"[1, 'a'].size() == 2", false},                                            // HomogeneousAggregateLiterals
	{"{'a': 1, 'b': 'c'}.size() == 2", false},                                  // HomogeneousAggregateLiterals
	{"'abc'.upperAscii() == 'ABC' && 'a,b'.split(',').size() == 2", true},      // ext.Strings
	{"'%s-%d'.format(['a', 1]) == 'a-1'", true},                                // ext.Strings(1)
	{"strings.quote('a') == '\"a\"'", true},                                    // ext.Strings(1)
	{"'abc'.reverse() == 'cba'", false},                                        // ext.Strings(3) is not on
	{"sets.contains([1, 2, 3], [1, 2]) && sets.intersects([1], [1, 2])", true}, // ext.Sets
	{"ip('10.0.0.1').family() == 4 && isIP('::1')", true},                      // library.IP
	{"cidr('10.0.0.0/8').containsIP(ip('10.0.0.1'))", true},                    // library.CIDR
	{"isCIDR('10.0.0.0/8')", true},                                             // library.CIDR
	{"!format.dns1123Label().validate(object.metadata.name).hasValue()", true}, // library.Format
	{"object.metadata.labels.all(k, v, v != '')", true},                        // ext.TwoVarComprehensions
	{"{'a': 1}.transformMap(k, v, v + 1)['a'] == 2", true},                     // ext.TwoVarComprehensions
	{"semver('1.2.3').isLessThan(semver('1.3.0'))", true},                      // library.SemverLib
	{"semver('1.2', true).major() == 1", true},                                 // library.SemverLib(1)
	{"isSemver('1.2.3')", true},                                                // library.SemverLib
	{"[3, 1, 2].sort() == [1, 2, 3] && lists.range(3).size() == 3", true},      // ext.Lists(3)
	{"[[1], [2]].flatten().distinct().reverse().first().hasValue()", true},     // ext.Lists(3)
	{"[1, 2].slice(0, 1) == [1]", true},                                        // ext.Lists
	// What the base environment doesn't have.
	{"math.greatest(1, 2) == 2", false},
	{"base64.encode(b'a') == 'YQ=='", false},
	{"cel.bind(x, 1, x == 1)", false},
	{"jsonpatch.escapeKey('a/b') == 'a~1b'", false},
	{"object.metadata.name.unknownFunction()", false},
}

// apiServer compiles a match condition with the API server's own
// compiler, as its validation of a new webhook configuration does.
func apiServer() func(expression string) error {
	compiler := plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	return func(expression string) error {
		r := compiler.CompileCELExpression(condition(expression),
			plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.NewExpressions)
		if r.Error != nil {
			return r.Error
		}
		return nil
	}
}

// condition is a match condition as the API server's compiler reads it.
type condition string

func (c condition) GetExpression() string    { return string(c) }
func (c condition) ReturnTypes() []*cel.Type { return []*cel.Type{cel.BoolType} }

func TestCompatibility_is_the_API_servers(t *testing.T) {
	require.Equal(t, Compatibility, environment.DefaultCompatibilityVersion().String(),
		"the API server's compiler declares another version's environment: read its base.go again and update baseOptions")
}

func TestTypes_are_the_API_servers(t *testing.T) {
	require.Equal(t, plugincel.BuildRequestType(), requestType())
	require.Equal(t, plugincel.BuildNamespaceType(), namespaceType())
}

func TestMatchConditions_compiles_as_the_API_servers_compiler(t *testing.T) {
	server, ours := apiServer(), MatchConditions()
	for _, c := range corpus {
		got, want := ours(c.expression), server(c.expression)
		require.Equal(t, c.ok, want == nil, "the API server on %q: %v", c.expression, want)
		require.Equal(t, want == nil, got == nil, "%q: the API server says %v, celcheck %v", c.expression, want, got)
	}
}

func TestMatchConditions_names_the_API_servers_reason(t *testing.T) {
	check := MatchConditions()
	for expression, want := range map[string]string{
		"object.metadata.name":            "must evaluate to bool but got dyn",
		"object.metadata.name ==":         "compilation failed: ERROR: <input>:1:24: Syntax error",
		"params.x == 1":                   "undeclared reference to 'params'",
		"request.foo == 'x'":              "undefined field 'foo'",
		"  request.dryRun  ":              "",
		"[1, 2].includes(2)":              "undeclared reference to 'includes'",
		"duration('1x') > duration('1m')": "invalid duration argument",
	} {
		err := check(expression)
		if want == "" {
			require.NoError(t, err, expression)
			continue
		}
		require.ErrorContains(t, err, want, expression)
		require.ErrorContains(t, apiServer()(expression), want, "the API server's message on %q", expression)
	}
}

// compileNeutral are the options whose absence no expression can show at
// compile time: when declarations are validated, the time zone of
// evaluation, and how a cost is estimated, which a match condition's
// validation doesn't do.
var compileNeutral = []string{"EagerlyValidateDeclarations", "DefaultUTCTimeZone", "CostEstimatorOptions"}

// twins are options that do the same thing, as the API server has both:
// cel-go's HomogeneousAggregateLiterals is the AST validator. Dropping one
// changes nothing; the test drops both at once.
var twins = map[string]string{
	"HomogeneousAggregateLiterals":         "ValidateHomogeneousAggregateLiterals",
	"ValidateHomogeneousAggregateLiterals": "HomogeneousAggregateLiterals",
}

// without returns opts without the ones named.
func without(opts []option, names ...string) []option {
	return slices.DeleteFunc(slices.Clone(opts), func(o option) bool { return slices.Contains(names, o.name) })
}

// TestCorpus_notices_each_option_dropped proves the corpus covers the
// environment: without any one library, language option or variable,
// some expression compiles otherwise than on the API server.
func TestCorpus_notices_each_option_dropped(t *testing.T) {
	server := apiServer()
	want := make([]bool, len(corpus))
	for i, c := range corpus {
		want[i] = server(c.expression) == nil
	}
	base, vars := baseOptions(), variables()
	check := func(t *testing.T, base, vars []option) {
		env, err := newEnv(base, vars)
		require.NoError(t, err)
		for i, c := range corpus {
			if (compile(env, c.expression) == nil) != want[i] {
				return
			}
		}
		t.Error("no expression of the corpus compiles otherwise without it")
	}
	for _, o := range base {
		if slices.Contains(compileNeutral, o.name) {
			continue
		}
		t.Run("base/"+o.name, func(t *testing.T) {
			check(t, without(base, o.name, twins[o.name]), vars)
		})
	}
	for _, o := range vars {
		t.Run("variable/"+o.name, func(t *testing.T) {
			check(t, base, without(vars, o.name))
		})
	}
	// A library at another version, where a version changes what
	// compiles (ext.Strings' version 2 and ext.Lists' version 3 change
	// evaluation and cost estimates only).
	for _, v := range []struct {
		replaces string
		by       option
	}{
		{"ext.Strings(2)", option{"ext.Strings(0)", ext.Strings(ext.StringsVersion(0))}},
		{"ext.Strings(2)", option{"ext.Strings(3)", ext.Strings(ext.StringsVersion(3))}},
		{"library.Lists(0)", option{"library.Lists(1)", library.Lists(library.ListsVersion(1))}},
		{"library.SemverLib(1)", option{"library.SemverLib(0)", library.SemverLib(library.SemverVersion(0))}},
		{"ext.Lists(3)", option{"ext.Lists(1)", ext.Lists(ext.ListsVersion(1))}},
	} {
		t.Run("version/"+v.by.name, func(t *testing.T) {
			replaced := slices.Clone(base)
			i := slices.IndexFunc(replaced, func(o option) bool { return o.name == v.replaces })
			require.NotEqual(t, -1, i, v.replaces)
			replaced[i] = v.by
			check(t, replaced, vars)
		})
	}
}
