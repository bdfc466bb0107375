package webhookconfig

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxMatchConditions is the most match conditions a webhook takes, as the
// API server bounds them.
const MaxMatchConditions = 64

// OwnObjectSubResources returns the subresources whose requests carry
// the resource's own object, such as a Pod for pods/status, which a
// SubResources option may name. Any other subresource, such as scale or
// exec, carries an object of another kind, which a Hook typed on the
// resource's can't decode.
func OwnObjectSubResources() []string {
	return []string{"status", "ephemeralcontainers", "resize", "finalize", "approval"}
}

// applyMore sets what o, an option of the kinds apply leaves to it, sets
// in s, for the Hook h, and returns what is wrong with o.
func (s *Settings) applyMore(h Hook, o Option) []string {
	var mistakes []string
	mistake := func(format string, args ...any) { mistakes = append(mistakes, fmt.Sprintf(format, args...)) }
	switch o.Kind {
	case SideEffects:
		c := admissionregistrationv1.SideEffectClass(o.Value)
		if c != admissionregistrationv1.SideEffectClassNone && c != admissionregistrationv1.SideEffectClassNoneOnDryRun {
			mistake("the class is neither None nor NoneOnDryRun, the two admissionregistration/v1 takes")
		}
		s.SideEffects = c
	case ReinvocationPolicy:
		p := admissionregistrationv1.ReinvocationPolicyType(o.Value)
		if p != admissionregistrationv1.NeverReinvocationPolicy && p != admissionregistrationv1.IfNeededReinvocationPolicy {
			mistake("the policy is neither Never nor IfNeeded")
		}
		if h.Type != Mutate {
			mistake("only a Mutate is reinvoked: a validating webhook runs once, after every mutation")
		}
		s.Reinvocation = &p
	case MatchPolicy:
		p := admissionregistrationv1.MatchPolicyType(o.Value)
		if p != admissionregistrationv1.Equivalent && p != admissionregistrationv1.Exact {
			mistake("the policy is neither Equivalent nor Exact")
		}
		s.MatchPolicy = p
	case MatchConditions:
		mistakes = s.conditions(o.Conditions, o.Compiler)
	case SubResources:
		mistakes = s.subResources(h, o.Names)
	case IncludeOwnNamespace:
		switch {
		case !h.OfKind:
			mistake("only a Kind's webhook leaves the App's own namespace out: a Resource's admits every namespace already")
		case h.Scope == string(admissionregistrationv1.ClusterScope):
			mistake("a cluster-scoped Kind's objects are in no namespace: its webhook leaves none out")
		}
		s.IncludeOwnNamespace = true
	}
	return mistakes
}

// conditions sets s's Conditions to cs, and returns what is wrong with
// them: too many, a missing or malformed name, a name given twice, an
// empty expression, and one compiler's Check fails.
func (s *Settings) conditions(cs []Condition, compiler func() Check) []string {
	var mistakes []string
	var check Check
	if compiler != nil && len(cs) > 0 {
		check = compiler()
	}
	mistake := func(format string, args ...any) { mistakes = append(mistakes, fmt.Sprintf(format, args...)) }
	if len(cs) == 0 {
		mistake("no condition: pass at least one kube.MatchCondition")
	}
	if len(cs) > MaxMatchConditions {
		mistake("%d conditions, more than the %d the API server takes", len(cs), MaxMatchConditions)
	}
	seen := map[string]bool{}
	for i, c := range cs {
		switch {
		case c.Name == "":
			mistake("condition %d: the name is missing", i)
		case seen[c.Name]:
			mistake("condition %d: the name %q is given twice", i, c.Name)
		default:
			if p := validation.IsQualifiedName(c.Name); len(p) > 0 {
				mistake("condition %d: the name %q: %s", i, c.Name, strings.Join(p, "; "))
			}
		}
		seen[c.Name] = true
		switch {
		case strings.TrimSpace(c.Expression) == "":
			mistake("condition %d (%s): the expression is empty", i, c.Name)
		case check != nil:
			if err := check(c.Expression); err != nil {
				mistake("condition %d (%s): %v", i, c.Name, err)
			}
		}
		s.Conditions = append(s.Conditions, admissionregistrationv1.MatchCondition{Name: c.Name, Expression: c.Expression})
	}
	return mistakes
}

// subResources sets s's SubResources to names, for the Hook h, and
// returns what is wrong with them.
func (s *Settings) subResources(h Hook, names []string) []string {
	var mistakes []string
	mistake := func(format string, args ...any) { mistakes = append(mistakes, fmt.Sprintf(format, args...)) }
	if len(names) == 0 {
		mistake("no subresource: name one, such as status")
	}
	if h.SubResource != "" {
		mistake("a subresource's Hook admits its own subresource alone")
	}
	for _, n := range names {
		switch {
		case slices.Contains(s.SubResources, n):
			mistake("%s is named twice", n)
		case !slices.Contains(OwnObjectSubResources(), n):
			mistake("the requests to %s/%s carry no %s, which this Hook decodes: admit them with kube.ValidateSubResource or MutateSubResource, typed on their object (or name one of %s)",
				h.Plural, n, h.Kind, strings.Join(OwnObjectSubResources(), ", "))
		}
		s.SubResources = append(s.SubResources, n)
	}
	return mistakes
}
