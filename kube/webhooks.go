package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/loam-dev/loam/adapters/webhook"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/tlsfiles"
	"github.com/loam-dev/loam/domain/controller"
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
	// admitter is a Validate's or a Mutate's, and converter a
	// Conversion's, which returns the hub's mistakes instead.
	admitter  ports.Admitter
	converter func() (ports.Converter, error)
	options   []HookOption
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

// Conversion serves the conversion webhook of hub, a Resource with
// Versions: the API server calls it to convert hub's objects between any
// two of their versions, through hub, at the path the CRD's conversion
// stanza names, /convert/<group>/<plural>. NewWebhooks reports every
// mistake hub's CRD would. WebhookConfigurations writes nothing for it:
// the CRD carries it.
func Conversion[Spec, Status any](hub Resource[Spec, Status]) Hook {
	h := resourceHook(hookConversion, hub, nil)
	h.desc = fmt.Sprintf("Conversion(%s)", hub.name())
	h.converter = hub.converter
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
// validate.v1.pods.core for the core group; a Conversion's, in telemetry
// only, is convert.<plural>.<group>.
func (h Hook) webhookName() string {
	switch h.typ {
	case hookMutate:
		return "mutate." + h.version + "." + h.plural + "." + h.groupName()
	case hookConversion:
		return "convert." + h.plural + "." + h.groupName()
	}
	return "validate." + h.version + "." + h.plural + "." + h.groupName()
}

// convert returns a Conversion's Converter, or its hub's mistakes.
func (h Hook) convert() (ports.Converter, error) {
	if h.converter == nil {
		return nil, nil
	}
	return h.converter()
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

// DefaultWebhookAddress is where DefaultWebhookSettings serves the
// webhooks: port 9443 on every interface, the port kubebuilder's
// operators use, so a Service written for one fits.
const DefaultWebhookAddress = ":9443"

// DefaultMaxRequestBytes bounds a review's body by default: 7 MiB. The API
// server accepts objects of up to 3 MiB, and an update's review carries
// the object twice, as it is and as it was, with the review around them;
// anything larger is no review the API server sends.
const DefaultMaxRequestBytes = 7 << 20

// WebhookSettings configures the Webhooks Service. It follows loam's
// settings convention: plain values, checked all at once, and
// DefaultWebhookSettings for a starting point.
type WebhookSettings struct {
	// Address is the host:port the webhooks are served on, such as
	// :9443, which the Service in front of them targets. Port 0 picks a
	// free port, which suits tests.
	Address string
	// TLS names the serving certificate's files, such as a mounted
	// kubernetes.io/tls Secret's /tls/tls.crt and /tls/tls.key, and how
	// often they are re-read for a rotation. The API server calls
	// webhooks over HTTPS only.
	TLS tlsfiles.Settings
	// MaxRequestBytes bounds a review's body; a larger one is answered
	// with 413 Request Entity Too Large.
	MaxRequestBytes int64
}

// DefaultWebhookSettings returns the WebhookSettings an Init starts from:
// DefaultWebhookAddress, tlsfiles.DefaultSettings (no files, which an Init
// always sources) and DefaultMaxRequestBytes.
func DefaultWebhookSettings() WebhookSettings {
	return WebhookSettings{Address: DefaultWebhookAddress, TLS: tlsfiles.DefaultSettings(), MaxRequestBytes: DefaultMaxRequestBytes}
}

// mistakes returns an error for each mistake in s but its TLS settings,
// which tlsfiles.New checks, named by field.
func (s WebhookSettings) mistakes() []error {
	var errs []error
	if s.Address == "" {
		errs = append(errs, errors.New(`kube: WebhookSettings.Address is empty: set host:port, such as ":9443"`))
	} else if _, port, err := net.SplitHostPort(s.Address); err != nil {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.Address %q is not host:port: %w", s.Address, err))
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.Address %q: the port %q is not a number from 0 to 65535", s.Address, port))
	}
	if s.MaxRequestBytes < 1 {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.MaxRequestBytes is %d: want at least 1, such as DefaultMaxRequestBytes", s.MaxRequestBytes))
	}
	return errs
}

// Webhooks is the app.Service that serves an App's Hooks over HTTPS, on
// the Setup's Host, with the serving certificate re-read as it rotates.
// NewWebhooks makes one. Each review is a span, a duration and, when it is
// denied or panics, a log record, as docs/kubernetes.md's webhook
// telemetry says.
type Webhooks struct {
	server  *webhook.Server
	address string
	// served is closed once Serve has returned.
	served    chan struct{}
	serveOnce sync.Once
}

// NewWebhooks returns the Webhooks serving hooks as settings say, through
// s's Host and Telemetry. It reads the serving certificate, so a missing
// or malformed file fails the App's Init, not its first review.
//
// It fails with one error naming every mistake: a nil Setup, a bad
// Address or MaxRequestBytes, every mistake in the TLS settings and every
// file that doesn't read or parse, no hooks at all, and every mistake in
// hooks:
// the zero Hook, a nil function, a mistake in a Resource or a Kind, an
// option out of range or given twice, two Hooks served at one path, and a
// Conversion hub whose versions don't check, as its CRD would report.
func NewWebhooks(s *app.Setup, settings WebhookSettings, hooks ...Hook) (*Webhooks, error) {
	if s == nil {
		return nil, errors.New("kube: the Setup is nil: pass the one Init is given")
	}
	errs := settings.mistakes()
	if len(hooks) == 0 {
		errs = append(errs, errors.New("kube: no Hook: pass Validate, Mutate, ValidateKind, MutateKind or Conversion Hooks"))
	}
	_, mistakes := hookMistakes(hooks)
	errs = append(errs, mistakes...)
	routes := make([]webhook.Route, 0, len(hooks))
	for i, h := range hooks {
		r := webhook.Route{Path: h.Path(), Name: h.webhookName(), Admitter: h.admitter}
		switch h.typ {
		case hookValidate:
			r.Type = webhook.Validating
		case hookMutate:
			r.Type = webhook.Mutating
		case hookConversion:
			r.Type, r.Name, r.Admitter = webhook.Conversion, h.webhookName(), nil
			c, err := h.convert()
			if err != nil {
				errs = append(errs, fmt.Errorf("kube: Hook %d, %v: %w", i, h, err))
			}
			r.Converter = c
		}
		routes = append(routes, r)
	}
	t := s.Telemetry
	logs := cmp.Or[log.LoggerProvider](t.LoggerProvider, lognoop.NewLoggerProvider())
	logger := logs.Logger(scopeName)
	cert, err := tlsfiles.New(context.Background(), s.Host, settings.TLS, logger)
	if err != nil {
		errs = append(errs, fmt.Errorf("kube: WebhookSettings.TLS: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	server, err := webhook.New(webhook.Config{
		Network: s.Host.Network, Address: settings.Address, Certificate: cert, Routes: routes,
		MaxRequestBytes: settings.MaxRequestBytes,
		TracerProvider:  cmp.Or[trace.TracerProvider](t.TracerProvider, tracenoop.NewTracerProvider()),
		MeterProvider:   cmp.Or[metric.MeterProvider](t.MeterProvider, metricnoop.NewMeterProvider()),
		Propagator:      cmp.Or[propagation.TextMapPropagator](t.Propagator, propagation.TraceContext{}),
		Logger:          logger,
	})
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return &Webhooks{server: server, address: settings.Address, served: make(chan struct{})}, nil
}

// scopeName is the instrumentation scope of what kube records itself.
const scopeName = "github.com/loam-dev/loam/kube"

// Serve listens on the Settings' Address and answers the API server's
// reviews until ctx ends or Shutdown is called, then returns nil. It
// re-reads the certificate's files meanwhile. It fails when it cannot
// listen, and when it is called a second time.
func (w *Webhooks) Serve(ctx context.Context) error {
	defer w.serveOnce.Do(func() { close(w.served) })
	return w.server.Serve(ctx)
}

// Shutdown stops the Webhooks: Serve returns nil once the reviews in
// flight are answered. It returns an error wrapping ctx's when ctx ends
// first.
func (w *Webhooks) Shutdown(ctx context.Context) error { return w.server.Shutdown(ctx) }

// Ready is closed once the Webhooks listen, so the API server's calls
// reach them.
func (w *Webhooks) Ready() <-chan struct{} { return w.server.Ready() }

// Addr returns where the Webhooks listen, once Ready is closed, such as
// the port a test's Address of port 0 picked; nil before.
func (w *Webhooks) Addr() net.Addr { return w.server.Addr() }

// Healthy reports, as app/health's Monitor, whether the Webhooks serve:
// true from when they listen until Serve returns. It never fails.
func (w *Webhooks) Healthy(context.Context) (bool, error) {
	select {
	case <-w.served:
		return false, nil
	default:
	}
	select {
	case <-w.server.Ready():
		return true, nil
	default:
		return false, nil
	}
}

// String names the Webhooks, as the App's records about them do.
func (w *Webhooks) String() string { return "kube webhooks (" + w.address + ")" }

// AwaitWebhooksBound is the longest a Controller's Serve waits for an
// AwaitWebhooks' Webhooks to listen: 30 seconds, long enough for a
// certificate mounted at the pod's start to be read and the port opened,
// and short enough that a Webhooks that never listens shows as the
// Controller's own failure soon after.
const AwaitWebhooksBound = 30 * time.Second

// gate returns the domain's Gate that holds the Controller named
// controller until w listens, logging through logger when it starts to
// wait and when AwaitWebhooksBound passes.
func (w *Webhooks) gate(logger log.Logger, controllerName string) controller.Gate {
	emit := func(sev log.Severity, body string) {
		var r log.Record
		r.SetTimestamp(time.Now())
		r.SetSeverity(sev)
		r.SetSeverityText(sev.String())
		r.SetBody(attribute.StringValue(body))
		r.AddAttributes(
			attribute.String("loam.kube.controller.name", controllerName),
			attribute.String("loam.kube.webhooks.address", w.address),
		)
		logger.Emit(context.Background(), r)
	}
	return controller.Gate{
		Name: w.String(), Open: w.Ready(), Bound: AwaitWebhooksBound,
		Waiting: func() { emit(log.SeverityInfo, "waiting for the webhooks to serve") },
		Passed: func() {
			emit(log.SeverityWarn, fmt.Sprintf("the webhooks did not serve within %v: carrying on without them", AwaitWebhooksBound))
		},
	}
}

// gatesOf returns the Gates of the Controller named controllerName that
// awaits, its AwaitWebhooks' Webhooks, logging through s's LoggerProvider.
func gatesOf(s *app.Setup, controllerName string, awaits []*Webhooks) []controller.Gate {
	if len(awaits) == 0 {
		return nil
	}
	logger := cmp.Or[log.LoggerProvider](s.Telemetry.LoggerProvider, lognoop.NewLoggerProvider()).Logger(scopeName)
	gates := make([]controller.Gate, len(awaits))
	for i, w := range awaits {
		gates[i] = w.gate(logger, controllerName)
	}
	return gates
}
