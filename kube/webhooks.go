package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/loam-dev/loam/ports"
)

// Hook is one webhook of an App: what it admits or converts, the path it
// is served at, and its handler. Validate, Mutate, ValidateKind,
// MutateKind and Conversion make Hooks; NewWebhooks serves them, and
// WebhookConfigurations writes the configurations that tell the API
// server to call them. The zero Hook is a mistake.
type Hook struct {
	typ hookType
	// desc describes the Hook as the end user wrote it, for errors.
	desc string
	// group, version, plural, kind and scope are what the Hook admits or,
	// for a Conversion, converts.
	group, version, plural, kind string
	scope                        Scope
	// admitter is a Validate's or a Mutate's.
	admitter ports.Admitter
	options  []HookOption
	// mistakes are the Resource's or the Kind's and the function's.
	mistakes []error
	// named names the Resource or the Kind when its names are missing.
	named string
}

type hookType int

const (
	hookNone hookType = iota
	hookValidate
	hookMutate
	hookConversion
)

// Validate serves a validating webhook for r's objects: f decides each
// admission request, and an error denies it, with the error's message as
// kubectl prints it; the warnings are returned either way. An error that
// is a Kubernetes APIStatus, such as apierrors.NewForbidden's, keeps its
// code and reason; any other is denied with 403 Forbidden.
//
// The webhook is served at /validate/<group>/<version>/<plural>. opts set
// its failure policy, operations (Create and Update unless Operations
// says others), timeout and selectors. NewWebhooks and
// WebhookConfigurations report a nil f and a mistake in r or in opts.
func Validate[Spec, Status any](r Resource[Spec, Status], f func(ctx context.Context, a Admission[Object[Spec, Status]]) (warnings []string, err error), opts ...HookOption) Hook {
	h := resourceHook(hookValidate, r, opts)
	h.desc = fmt.Sprintf("Validate(%s)", h.name())
	if f == nil {
		h.mistakes = append(h.mistakes, errors.New("the function is nil"))
	} else {
		h.admitter = validator[Object[Spec, Status]]{gvk: h.gvk(), f: f}
	}
	return h
}

// Mutate serves a mutating webhook for r's objects, such as one that
// defaults what a schema default can't: f changes obj, a decoded copy of
// the request's Object, and the API server stores what f left, as the
// JSON patch of f's changes that the webhook answers with. An error
// denies the request, as Validate's does, and drops f's changes.
//
// The webhook is served at /mutate/<group>/<version>/<plural>, and opts
// are Validate's; a Mutate may not take Delete or Connect, whose requests
// have no object to change.
func Mutate[Spec, Status any](r Resource[Spec, Status], f func(ctx context.Context, a Admission[Object[Spec, Status]], obj *Object[Spec, Status]) (warnings []string, err error), opts ...HookOption) Hook {
	h := resourceHook(hookMutate, r, opts)
	h.desc = fmt.Sprintf("Mutate(%s)", h.name())
	if f == nil {
		h.mistakes = append(h.mistakes, errors.New("the function is nil"))
	} else {
		h.admitter = mutator[Object[Spec, Status]]{gvk: h.gvk(), f: f}
	}
	return h
}

// ValidateKind is Validate for the objects of k, one of Kubernetes' own
// kinds or another's, decoded into T. The core group's webhook is served
// at /validate/core/<version>/<plural>.
func ValidateKind[T any](k Kind[T], f func(ctx context.Context, a Admission[T]) ([]string, error), opts ...HookOption) Hook {
	h := kindHook(hookValidate, k, opts)
	h.desc = fmt.Sprintf("ValidateKind(%s)", h.name())
	if f == nil {
		h.mistakes = append(h.mistakes, errors.New("the function is nil"))
	} else {
		h.admitter = validator[T]{gvk: h.gvk(), f: f}
	}
	return h
}

// MutateKind is Mutate for the objects of k, decoded into T. The core
// group's webhook is served at /mutate/core/<version>/<plural>.
func MutateKind[T any](k Kind[T], f func(ctx context.Context, a Admission[T], obj *T) ([]string, error), opts ...HookOption) Hook {
	h := kindHook(hookMutate, k, opts)
	h.desc = fmt.Sprintf("MutateKind(%s)", h.name())
	if f == nil {
		h.mistakes = append(h.mistakes, errors.New("the function is nil"))
	} else {
		h.admitter = mutator[T]{gvk: h.gvk(), f: f}
	}
	return h
}

// resourceHook returns the Hook of type typ for r's objects, with r's
// mistakes.
func resourceHook[Spec, Status any](typ hookType, r Resource[Spec, Status], opts []HookOption) Hook {
	h := Hook{typ: typ, group: r.Group, version: r.Version, plural: r.Plural, kind: r.Kind, scope: r.Scope, options: opts}
	for _, err := range r.controllerMistakes() {
		h.mistakes = append(h.mistakes, fmt.Errorf("Resource %s: %w", r.name(), err))
	}
	h.named = r.name()
	return h
}

// kindHook returns the Hook of type typ for k's objects, with k's
// mistakes.
func kindHook[T any](typ hookType, k Kind[T], opts []HookOption) Hook {
	h := Hook{typ: typ, group: k.GVR.Group, version: k.GVR.Version, plural: k.GVR.Resource, kind: k.Kind, scope: k.Scope, options: opts}
	for _, err := range k.mistakes() {
		h.mistakes = append(h.mistakes, fmt.Errorf("Kind %s: %w", k.name(), err))
	}
	h.named = k.name()
	return h
}

// name names what h admits, such as memcacheds.v1alpha1.cache.example.com,
// or by its Resource's or Kind's name when a name is missing.
func (h Hook) name() string {
	if h.plural == "" || h.version == "" {
		return h.named
	}
	return h.plural + "." + h.version + "." + h.groupName()
}

// groupName is h's group, or core for Kubernetes' core group, whose name
// is empty: paths and webhook names need a segment there.
func (h Hook) groupName() string {
	if h.group == "" {
		return "core"
	}
	return h.group
}

// gvk is what h admits, as a review names it.
func (h Hook) gvk() groupVersionKind { return groupVersionKind{h.group, h.version, h.kind} }

// String describes the Hook as the end user wrote it, for errors.
func (h Hook) String() string {
	if h.typ == hookNone {
		return "Hook{}"
	}
	return h.desc
}

// Path returns the path the Hook is served at, such as
// /validate/cache.example.com/v1alpha1/memcacheds, or "" for the zero
// Hook.
func (h Hook) Path() string {
	switch h.typ {
	case hookValidate:
		return "/validate/" + h.groupName() + "/" + h.version + "/" + h.plural
	case hookMutate:
		return "/mutate/" + h.groupName() + "/" + h.version + "/" + h.plural
	case hookConversion:
		return conversionPath(h.group, h.plural)
	}
	return ""
}

// webhookName returns the name of the Hook's webhook in its
// configuration: fully qualified, as the API server requires, such as
// validate.v1alpha1.memcacheds.cache.example.com, or
// validate.v1.pods.core for the core group.
func (h Hook) webhookName() string {
	prefix := "validate."
	if h.typ == hookMutate {
		prefix = "mutate."
	}
	return prefix + h.version + "." + h.plural + "." + h.groupName()
}

// FailurePolicyType says what the API server does with a request when it
// can't reach a webhook or the webhook fails to answer.
type FailurePolicyType string

const (
	// Fail rejects the request: the default, since a webhook that
	// enforces a policy enforces nothing if it can be bypassed.
	Fail FailurePolicyType = "Fail"
	// Ignore admits the request as if the webhook had.
	Ignore FailurePolicyType = "Ignore"
)

// HookOption sets one thing about a Validate's or a Mutate's webhook:
// FailurePolicy, Operations, TimeoutSeconds, NamespaceSelector or
// ObjectSelector. A Hook takes each at most once.
type HookOption struct {
	kind   hookOptionKind
	policy FailurePolicyType
	ops    []Operation
	// timeout is a TimeoutSeconds'.
	timeout  int32
	selector metav1.LabelSelector
}

type hookOptionKind int

const (
	optionNone hookOptionKind = iota
	optionFailurePolicy
	optionOperations
	optionTimeout
	optionNamespaceSelector
	optionObjectSelector
)

// FailurePolicy sets what the API server does when it can't reach the
// webhook or the webhook fails: Fail, the default, or Ignore.
func FailurePolicy(p FailurePolicyType) HookOption {
	return HookOption{kind: optionFailurePolicy, policy: p}
}

// Operations sets the operations the webhook admits, in place of the
// default Create and Update.
func Operations(ops ...Operation) HookOption {
	return HookOption{kind: optionOperations, ops: ops}
}

// MaxTimeoutSeconds and DefaultTimeoutSeconds bound and default
// TimeoutSeconds, as the API server does.
const (
	MaxTimeoutSeconds     = 30
	DefaultTimeoutSeconds = 10
)

// TimeoutSeconds sets how long the API server waits for the webhook, from
// 1 to MaxTimeoutSeconds; the default is DefaultTimeoutSeconds. The
// webhook's handler context ends when it passes, as the API server gives
// up then.
func TimeoutSeconds(seconds int32) HookOption {
	return HookOption{kind: optionTimeout, timeout: seconds}
}

// NamespaceSelector limits the webhook to the objects in the namespaces
// whose labels s selects, and the cluster-scoped objects, as the API
// server's namespaceSelector does.
func NamespaceSelector(s metav1.LabelSelector) HookOption {
	return HookOption{kind: optionNamespaceSelector, selector: s}
}

// ObjectSelector limits the webhook to the objects whose labels s
// selects, as the API server's objectSelector does.
func ObjectSelector(s metav1.LabelSelector) HookOption {
	return HookOption{kind: optionObjectSelector, selector: s}
}

// String describes the option as the end user wrote it, for errors.
func (o HookOption) String() string {
	switch o.kind {
	case optionFailurePolicy:
		return fmt.Sprintf("FailurePolicy(%q)", o.policy)
	case optionOperations:
		return fmt.Sprintf("Operations(%q)", o.ops)
	case optionTimeout:
		return fmt.Sprintf("TimeoutSeconds(%d)", o.timeout)
	case optionNamespaceSelector:
		return fmt.Sprintf("NamespaceSelector(%s)", metav1.FormatLabelSelector(&o.selector))
	case optionObjectSelector:
		return fmt.Sprintf("ObjectSelector(%s)", metav1.FormatLabelSelector(&o.selector))
	}
	return "HookOption{}"
}

// hookSettings is what a Hook's options add up to.
type hookSettings struct {
	policy     admissionregistrationv1.FailurePolicyType
	operations []admissionregistrationv1.OperationType
	timeout    int32
	namespaces *metav1.LabelSelector
	objects    *metav1.LabelSelector
}

// settings returns what h's options add up to, and an error for each
// mistake in h: its own, and its options'.
func (h Hook) settings() (hookSettings, []error) {
	s := hookSettings{
		policy:     admissionregistrationv1.Fail,
		operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		timeout:    DefaultTimeoutSeconds,
	}
	if h.typ == hookNone {
		return s, []error{errors.New("the zero Hook: make Hooks with Validate, Mutate, ValidateKind, MutateKind or Conversion")}
	}
	errs := slices.Clone(h.mistakes)
	seen := map[hookOptionKind]bool{}
	for i, o := range h.options {
		mistake := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("option %d, %v: %s", i, o, fmt.Sprintf(format, args...)))
		}
		if o.kind != optionNone && seen[o.kind] {
			mistake("a Hook takes one of each option, and this is a second")
		}
		seen[o.kind] = true
		switch o.kind {
		case optionNone:
			mistake("the zero HookOption: make options with FailurePolicy, Operations, TimeoutSeconds, NamespaceSelector or ObjectSelector")
		case optionFailurePolicy:
			if o.policy != Fail && o.policy != Ignore {
				mistake("the policy is neither Fail nor Ignore")
			}
			s.policy = admissionregistrationv1.FailurePolicyType(o.policy)
		case optionOperations:
			if len(o.ops) == 0 {
				mistake("no operation: pass kube.Create, Update, Delete or Connect")
			}
			s.operations = nil
			for _, op := range o.ops {
				switch {
				case !op.valid():
					mistake("%q is not an operation: pass kube.Create, Update, Delete or Connect", op)
				case h.typ == hookMutate && (op == Delete || op == Connect):
					mistake("a Mutate may not take %s: its requests have no object to change", op)
				case slices.Contains(s.operations, admissionregistrationv1.OperationType(op)):
					mistake("%s is named twice", op)
				}
				s.operations = append(s.operations, admissionregistrationv1.OperationType(op))
			}
		case optionTimeout:
			if o.timeout < 1 || o.timeout > MaxTimeoutSeconds {
				mistake("the timeout is not from 1 to %d seconds", MaxTimeoutSeconds)
			}
			s.timeout = o.timeout
		case optionNamespaceSelector, optionObjectSelector:
			sel := o.selector
			if _, err := metav1.LabelSelectorAsSelector(&sel); err != nil {
				mistake("%v", err)
			}
			if o.kind == optionNamespaceSelector {
				s.namespaces = &sel
			} else {
				s.objects = &sel
			}
		}
	}
	if h.typ == hookConversion && len(h.options) > 0 {
		errs = append(errs, errors.New("a Conversion takes no option"))
	}
	if h.typ != hookConversion && len(h.mistakes) == 0 {
		if p := validation.IsDNS1123Subdomain(h.webhookName()); len(p) > 0 {
			errs = append(errs, fmt.Errorf("the webhook's name %q: %s", h.webhookName(), strings.Join(p, "; ")))
		}
	}
	return s, errs
}

// hookMistakes returns an error for each mistake in hooks, each named by
// the Hook's place and description: the Hooks' own, and two Hooks served
// at one path.
func hookMistakes(hooks []Hook) ([]hookSettings, []error) {
	var errs []error
	settings := make([]hookSettings, len(hooks))
	paths := map[string]int{}
	for i, h := range hooks {
		s, mistakes := h.settings()
		settings[i] = s
		if p := h.Path(); p != "" {
			if j, ok := paths[p]; ok {
				mistakes = append(mistakes, fmt.Errorf("Hook %d, %v, is served at %s too: one Hook a path", j, hooks[j], p))
			} else {
				paths[p] = i
			}
		}
		for _, err := range mistakes {
			errs = append(errs, fmt.Errorf("kube: Hook %d, %v: %w", i, h, err))
		}
	}
	return settings, errs
}

// WebhookConfigurations returns the ValidatingWebhookConfiguration and
// the MutatingWebhookConfiguration, both named name, that tell the API
// server to call hooks' webhooks through client: nil for a type of which
// hooks have none. Each Hook is one webhook, in hooks' order, named
// validate.<version>.<plural>.<group> or mutate.…, with core for the core
// group, matching its resource's create and update (or its Operations)
// in any of its versions (matchPolicy Equivalent, so the API server
// converts an object of another version to the webhook's first), with no
// side effects. Conversion Hooks are left out: the CRD carries them.
//
// Both have their apiVersion and kind, so their YAML, as sigs.k8s.io/yaml
// writes it, applies as it is. It fails with one error naming every
// mistake: a name that isn't a DNS subdomain, a mistake in client, and
// every mistake NewWebhooks reports in hooks.
func WebhookConfigurations(name string, client WebhookClient, hooks ...Hook) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration, error) {
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("kube: the webhook configurations' name is missing"))
	} else if p := validation.IsDNS1123Subdomain(name); len(p) > 0 {
		errs = append(errs, fmt.Errorf("kube: the webhook configurations' name %q: %s", name, strings.Join(p, "; ")))
	}
	for _, err := range client.mistakes("WebhookClient") {
		errs = append(errs, fmt.Errorf("kube: %w", err))
	}
	settings, mistakes := hookMistakes(hooks)
	if err := errors.Join(append(errs, mistakes...)...); err != nil {
		return nil, nil, err
	}

	var validating []admissionregistrationv1.ValidatingWebhook
	var mutating []admissionregistrationv1.MutatingWebhook
	for i, h := range hooks {
		s := settings[i]
		scope := admissionregistrationv1.ScopeType(h.scope)
		rules := []admissionregistrationv1.RuleWithOperations{{
			Operations: s.operations,
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{h.group}, APIVersions: []string{h.version},
				Resources: []string{h.plural}, Scope: &scope,
			},
		}}
		equivalent := admissionregistrationv1.Equivalent
		none := admissionregistrationv1.SideEffectClassNone
		policy, timeout := s.policy, s.timeout
		switch h.typ {
		case hookValidate:
			validating = append(validating, admissionregistrationv1.ValidatingWebhook{
				Name: h.webhookName(), ClientConfig: client.admission(h.Path()), Rules: rules,
				FailurePolicy: &policy, MatchPolicy: &equivalent,
				NamespaceSelector: s.namespaces, ObjectSelector: s.objects,
				SideEffects: &none, TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"},
			})
		case hookMutate:
			mutating = append(mutating, admissionregistrationv1.MutatingWebhook{
				Name: h.webhookName(), ClientConfig: client.admission(h.Path()), Rules: rules,
				FailurePolicy: &policy, MatchPolicy: &equivalent,
				NamespaceSelector: s.namespaces, ObjectSelector: s.objects,
				SideEffects: &none, TimeoutSeconds: &timeout, AdmissionReviewVersions: []string{"v1"},
			})
		}
	}
	var v *admissionregistrationv1.ValidatingWebhookConfiguration
	if len(validating) > 0 {
		v = &admissionregistrationv1.ValidatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks:   validating,
		}
	}
	var m *admissionregistrationv1.MutatingWebhookConfiguration
	if len(mutating) > 0 {
		m = &admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks:   mutating,
		}
	}
	return v, m, nil
}
