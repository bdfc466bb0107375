// Package webhookconfig is the generator of an App's webhook
// configurations, as domain/crd is of its CRDs: from plain values that
// describe each Hook and how the API server reaches the webhooks, it
// checks every mistake at once and writes the
// ValidatingWebhookConfiguration, the MutatingWebhookConfiguration and a
// CRD's conversion client config. It also names each Hook's path and
// webhook, which the webhook server serves them by. kube declares the
// typed Hooks and feeds it their values.
package webhookconfig

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Type is what a Hook does. The zero Type is the zero Hook's, a mistake.
type Type int

// The Types of Hook.
const (
	None Type = iota
	// Validate admits or denies objects.
	Validate
	// Mutate changes objects as they are admitted.
	Mutate
	// Conversion converts a resource's objects between its versions.
	Conversion
)

// Hook describes one webhook as the end user declared it: what it admits
// or converts, and its options.
type Hook struct {
	Type Type
	// Desc describes the Hook as the end user wrote it, such as
	// Validate(memcacheds.v1alpha1.cache.example.com), for errors.
	Desc string
	// Group, Version, Plural and Kind are what the Hook admits or, for a
	// Conversion, converts; Scope is its resource's scope, Namespaced or
	// Cluster.
	Group, Version, Plural, Kind string
	Scope                        string
	// SubResource is the subresource the Hook admits alone, such as scale
	// or exec, whose requests carry an object of another kind than the
	// resource's, as Kind names it; empty for the resource's own objects.
	SubResource string
	// OfKind says the Hook admits a Kind's objects, such as Pods, rather
	// than one of the App's own Resources: its webhook leaves the App's
	// own namespace out unless an IncludeOwnNamespace option says not to,
	// so that an App whose pods are down never blocks its own restart.
	OfKind bool
	// Options are the Hook's options, in the order given.
	Options []Option
	// Mistakes are those found in what the Hook was made of: its Resource
	// or Kind, and its function.
	Mistakes []error
}

// String describes the Hook as the end user wrote it, or as Hook{} for
// the zero Hook.
func (h Hook) String() string {
	if h.Type == None {
		return "Hook{}"
	}
	return h.Desc
}

// GroupName is h's group, or core for Kubernetes' core group, whose name
// is empty: paths and webhook names need a segment there.
func (h Hook) GroupName() string {
	if h.Group == "" {
		return "core"
	}
	return h.Group
}

// Path returns the path the Hook is served at: for a Validate,
// /validate/<group>/<version>/<plural>, for a Mutate, /mutate/…, with
// core for the core group and /<subresource> after the plural for a
// subresource's Hook; for a Conversion, ConversionPath's; "" for the zero
// Hook.
func (h Hook) Path() string {
	switch h.Type {
	case Validate:
		return "/validate/" + h.GroupName() + "/" + h.Version + "/" + h.resource("/")
	case Mutate:
		return "/mutate/" + h.GroupName() + "/" + h.Version + "/" + h.resource("/")
	case Conversion:
		return ConversionPath(h.Group, h.Plural)
	}
	return ""
}

// ConversionPath is the path of the conversion webhook of the resource
// named plural in group, which the CRD's conversion stanza names and the
// webhook server serves.
func ConversionPath(group, plural string) string { return "/convert/" + group + "/" + plural }

// WebhookName returns the name of the Hook's webhook in its
// configuration: fully qualified, as the API server requires, such as
// validate.v1alpha1.memcacheds.cache.example.com, or
// validate.v1.pods.core for the core group; a Conversion's, in telemetry
// only, is convert.<plural>.<group>.
func (h Hook) WebhookName() string {
	switch h.Type {
	case Mutate:
		return "mutate." + h.Version + "." + h.resource(".") + "." + h.GroupName()
	case Conversion:
		return "convert." + h.Plural + "." + h.GroupName()
	}
	return "validate." + h.Version + "." + h.resource(".") + "." + h.GroupName()
}

// resource returns h's plural, and its subresource after sep when it has
// one, such as deployments/scale.
func (h Hook) resource(sep string) string {
	if h.SubResource == "" {
		return h.Plural
	}
	return h.Plural + sep + h.SubResource
}

// OptionKind is what an Option sets. The zero OptionKind is the zero
// Option's, a mistake.
type OptionKind int

// The kinds of Option.
const (
	NoOption OptionKind = iota
	FailurePolicy
	Operations
	TimeoutSeconds
	NamespaceSelector
	ObjectSelector
	SideEffects
	ReinvocationPolicy
	MatchPolicy
	MatchConditions
	SubResources
	IncludeOwnNamespace
)

// Condition is a match condition: a CEL expression the API server
// evaluates before it calls the webhook, calling it only when every
// condition is true.
type Condition struct {
	Name, Expression string
}

// Option sets one thing about a Validate's or a Mutate's webhook; the
// field its Kind names holds its value.
type Option struct {
	Kind OptionKind
	// Policy is a FailurePolicy's: Fail or Ignore.
	Policy string
	// Operations is an Operations': CREATE, UPDATE, DELETE or CONNECT.
	Operations []string
	// Timeout is a TimeoutSeconds'.
	Timeout int32
	// Selector is a NamespaceSelector's or an ObjectSelector's.
	Selector metav1.LabelSelector
	// Value is a SideEffects', a ReinvocationPolicy's or a MatchPolicy's:
	// the API server's name of the class or policy.
	Value string
	// Conditions are a MatchConditions'.
	Conditions []Condition
	// Compiler is a MatchConditions': it returns the Check that compiles
	// the Conditions' expressions, called once each time the option is
	// checked, so that what a Check builds (a CEL environment) is garbage
	// once the check is done. nil skips the compilation. It lives on the
	// option, not in this package's callers, so that a program links a
	// CEL compiler only if it makes match conditions.
	Compiler func() Check
	// Names are a SubResources': status, and the others whose requests
	// carry the resource's own object.
	Names []string
}

// String describes the option as the end user wrote it, for errors.
func (o Option) String() string {
	switch o.Kind {
	case FailurePolicy:
		return fmt.Sprintf("FailurePolicy(%q)", o.Policy)
	case Operations:
		return fmt.Sprintf("Operations(%q)", o.Operations)
	case TimeoutSeconds:
		return fmt.Sprintf("TimeoutSeconds(%d)", o.Timeout)
	case NamespaceSelector:
		return fmt.Sprintf("NamespaceSelector(%s)", metav1.FormatLabelSelector(&o.Selector))
	case ObjectSelector:
		return fmt.Sprintf("ObjectSelector(%s)", metav1.FormatLabelSelector(&o.Selector))
	case SideEffects, ReinvocationPolicy, MatchPolicy:
		return fmt.Sprintf("%s(%q)", o.Kind.name(), o.Value)
	case MatchConditions:
		names := make([]string, len(o.Conditions))
		for i, c := range o.Conditions {
			names[i] = c.Name
		}
		return fmt.Sprintf("MatchConditions(%q)", names)
	case SubResources:
		return fmt.Sprintf("SubResources(%q)", o.Names)
	case IncludeOwnNamespace:
		return "IncludeOwnNamespace()"
	}
	return "HookOption{}"
}

// name is the name of the option kube makes of k, for String.
func (k OptionKind) name() string {
	switch k {
	case SideEffects:
		return "SideEffects"
	case ReinvocationPolicy:
		return "ReinvocationPolicy"
	}
	return "MatchPolicy"
}
