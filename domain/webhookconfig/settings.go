package webhookconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxTimeoutSeconds and DefaultTimeoutSeconds bound and default a Hook's
// timeout, as the API server does.
const (
	MaxTimeoutSeconds     = 30
	DefaultTimeoutSeconds = 10
)

// Settings are what a Hook's options add up to.
type Settings struct {
	Policy     admissionregistrationv1.FailurePolicyType
	Operations []admissionregistrationv1.OperationType
	Timeout    int32
	// Namespaces and Objects are the selectors; nil selects everything.
	Namespaces *metav1.LabelSelector
	Objects    *metav1.LabelSelector
	// SideEffects is None unless a SideEffects option says NoneOnDryRun.
	SideEffects admissionregistrationv1.SideEffectClass
	// Reinvocation is a Mutate's ReinvocationPolicy; nil is the API
	// server's default, Never.
	Reinvocation *admissionregistrationv1.ReinvocationPolicyType
	// MatchPolicy is Equivalent unless a MatchPolicy option says Exact.
	MatchPolicy admissionregistrationv1.MatchPolicyType
	// Conditions are the match conditions, in the order given.
	Conditions []admissionregistrationv1.MatchCondition
	// SubResources are the subresources admitted besides the object.
	SubResources []string
	// IncludeOwnNamespace keeps the App's own namespace in a Kind's
	// webhook, which otherwise leaves it out.
	IncludeOwnNamespace bool
}

// Check compiles a match condition's CEL expression as the API server
// would, and returns why it does not compile or is not a bool.
type Check func(expression string) error

// Settings returns what h's options add up to, and an error for each
// mistake in h: its own Mistakes; the zero Hook; each option that is the
// zero Option, given twice or out of range; a Conversion given options;
// and a webhook name that is no DNS subdomain, with the match conditions'
// expressions compiled by their option's Compiler.
func (h Hook) Settings() (Settings, []error) {
	s := Settings{
		Policy:      admissionregistrationv1.Fail,
		Operations:  []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Timeout:     DefaultTimeoutSeconds,
		SideEffects: admissionregistrationv1.SideEffectClassNone,
		MatchPolicy: admissionregistrationv1.Equivalent,
	}
	if h.Type == None {
		return s, []error{errors.New("the zero Hook: make Hooks with Validate, Mutate, ValidateKind, MutateKind or Conversion")}
	}
	errs := slices.Clone(h.Mistakes)
	seen := map[OptionKind]bool{}
	for i, o := range h.Options {
		var mistakes []string
		if o.Kind != NoOption && seen[o.Kind] {
			mistakes = append(mistakes, "a Hook takes one of each option, and this is a second")
		}
		seen[o.Kind] = true
		mistakes = append(mistakes, s.apply(h, o)...)
		for _, m := range mistakes {
			errs = append(errs, fmt.Errorf("option %d, %v: %s", i, o, m))
		}
	}
	if h.Type == Conversion && len(h.Options) > 0 {
		errs = append(errs, errors.New("a Conversion takes no option"))
	}
	if h.Type != Conversion && len(h.Mistakes) == 0 {
		if p := validation.IsDNS1123Subdomain(h.WebhookName()); len(p) > 0 {
			errs = append(errs, fmt.Errorf("the webhook's name %q: %s", h.WebhookName(), strings.Join(p, "; ")))
		}
	}
	return s, errs
}

// apply sets what o sets in s, for the Hook h, and returns what is wrong
// with o.
func (s *Settings) apply(h Hook, o Option) []string {
	var mistakes []string
	mistake := func(format string, args ...any) { mistakes = append(mistakes, fmt.Sprintf(format, args...)) }
	switch o.Kind {
	case NoOption:
		mistake("the zero HookOption: make options with kube's FailurePolicy, Operations, TimeoutSeconds, NamespaceSelector, ObjectSelector, SideEffects, ReinvocationPolicy, MatchPolicy, SubResources or IncludeOwnNamespace, or kube/webhookcel's MatchConditions")
	case FailurePolicy:
		if p := admissionregistrationv1.FailurePolicyType(o.Policy); p != admissionregistrationv1.Fail && p != admissionregistrationv1.Ignore {
			mistake("the policy is neither Fail nor Ignore")
		}
		s.Policy = admissionregistrationv1.FailurePolicyType(o.Policy)
	case Operations:
		mistakes = append(mistakes, s.operations(h, o.Operations)...)
	case TimeoutSeconds:
		if o.Timeout < 1 || o.Timeout > MaxTimeoutSeconds {
			mistake("the timeout is not from 1 to %d seconds", MaxTimeoutSeconds)
		}
		s.Timeout = o.Timeout
	case NamespaceSelector, ObjectSelector:
		sel := o.Selector
		if _, err := metav1.LabelSelectorAsSelector(&sel); err != nil {
			mistake("%v", err)
		}
		if o.Kind == NamespaceSelector {
			s.Namespaces = &sel
		} else {
			s.Objects = &sel
		}
	default:
		mistakes = s.applyMore(h, o)
	}
	return mistakes
}

// operations sets s's Operations to ops, for the Hook h, and returns
// what is wrong with them.
func (s *Settings) operations(h Hook, ops []string) []string {
	t := h.Type
	var mistakes []string
	mistake := func(format string, args ...any) { mistakes = append(mistakes, fmt.Sprintf(format, args...)) }
	if len(ops) == 0 {
		mistake("no operation: pass kube.Create, Update, Delete or Connect")
	}
	s.Operations = nil
	for _, op := range ops {
		o := admissionregistrationv1.OperationType(op)
		switch {
		case o != admissionregistrationv1.Create && o != admissionregistrationv1.Update &&
			o != admissionregistrationv1.Delete && o != admissionregistrationv1.Connect:
			mistake("%q is not an operation: pass kube.Create, Update, Delete or Connect", op)
		case t == Mutate && (o == admissionregistrationv1.Delete || o == admissionregistrationv1.Connect):
			mistake("a Mutate may not take %s: its requests have no object to change", op)
		case o == admissionregistrationv1.Connect && h.SubResource == "":
			mistake("CONNECT is made to a subresource alone, such as pods/exec: admit it with ValidateSubResource, or it never fires")
		case slices.Contains(s.Operations, o):
			mistake("%s is named twice", op)
		}
		s.Operations = append(s.Operations, o)
	}
	return mistakes
}

// Mistakes returns each Hook's Settings, and an error for each mistake in
// hooks, each named by the Hook's place and description: the Hooks' own,
// with their match conditions compiled, and two Hooks served at one path
// or with one webhook name.
func Mistakes(hooks []Hook) ([]Settings, []error) {
	var errs []error
	settings := make([]Settings, len(hooks))
	paths, names := map[string]int{}, map[string]int{}
	for i, h := range hooks {
		s, mistakes := h.Settings()
		settings[i] = s
		if p := h.Path(); p != "" {
			if j, ok := paths[p]; ok {
				mistakes = append(mistakes, fmt.Errorf("Hook %d, %v, is served at %s too: one Hook a path", j, hooks[j], p))
			} else if j, ok := names[h.WebhookName()]; ok {
				mistakes = append(mistakes, fmt.Errorf("Hook %d, %v, has the webhook name %s too: one Hook a name", j, hooks[j], h.WebhookName()))
			} else {
				paths[p], names[h.WebhookName()] = i, i
			}
		}
		for _, err := range mistakes {
			errs = append(errs, fmt.Errorf("kube: Hook %d, %v: %w", i, h, err))
		}
	}
	return settings, errs
}
