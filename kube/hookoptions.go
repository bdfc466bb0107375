package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/webhookconfig"
	"github.com/loam-dev/loam/kube/internal/hookopt"
)

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
// FailurePolicy, Operations, TimeoutSeconds, NamespaceSelector,
// ObjectSelector, SideEffects, ReinvocationPolicy, MatchPolicy,
// SubResources or IncludeOwnNamespace, or kube/webhookcel's
// MatchConditions. A Hook takes each at most once.
type HookOption = hookopt.Option

// FailurePolicy sets what the API server does when it can't reach the
// webhook or the webhook fails: Fail, the default, or Ignore.
func FailurePolicy(p FailurePolicyType) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.FailurePolicy, Policy: string(p)})
}

// Operations sets the operations the webhook admits, in place of the
// default Create and Update.
func Operations(ops ...Operation) HookOption {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.Operations, Operations: names})
}

// MaxTimeoutSeconds and DefaultTimeoutSeconds bound and default
// TimeoutSeconds, as the API server does.
const (
	MaxTimeoutSeconds     = webhookconfig.MaxTimeoutSeconds
	DefaultTimeoutSeconds = webhookconfig.DefaultTimeoutSeconds
)

// TimeoutSeconds sets how long the API server waits for the webhook, from
// 1 to MaxTimeoutSeconds; the default is DefaultTimeoutSeconds. The
// webhook's handler context ends when it passes, as the API server gives
// up then.
func TimeoutSeconds(seconds int32) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.TimeoutSeconds, Timeout: seconds})
}

// NamespaceSelector limits the webhook to the objects in the namespaces
// whose labels s selects, and the cluster-scoped objects, as the API
// server's namespaceSelector does.
func NamespaceSelector(s metav1.LabelSelector) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.NamespaceSelector, Selector: s})
}

// ObjectSelector limits the webhook to the objects whose labels s
// selects, as the API server's objectSelector does.
func ObjectSelector(s metav1.LabelSelector) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.ObjectSelector, Selector: s})
}

// SideEffectClass says what calling a webhook does besides answering,
// as the API server must know to call it on a dry run.
type SideEffectClass string

const (
	// SideEffectsNone says the webhook changes nothing else: the default.
	SideEffectsNone SideEffectClass = "None"
	// SideEffectsNoneOnDryRun says the webhook changes something else,
	// but never when the Admission's DryRun is true.
	SideEffectsNoneOnDryRun SideEffectClass = "NoneOnDryRun"
)

// SideEffects sets the webhook's sideEffects: SideEffectsNone, the
// default, or SideEffectsNoneOnDryRun. The API server refuses a dry run
// to a webhook of any other class, and admissionregistration/v1 takes
// no other.
func SideEffects(c SideEffectClass) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.SideEffects, Value: string(c)})
}

// ReinvocationPolicyType says whether the API server calls a mutating
// webhook again after later webhooks changed the object.
type ReinvocationPolicyType string

const (
	// Never calls the webhook once: the API server's default.
	Never ReinvocationPolicyType = "Never"
	// IfNeeded calls it again, at most once, when a later mutating
	// webhook changed the object, so the webhook must be idempotent.
	IfNeeded ReinvocationPolicyType = "IfNeeded"
)

// ReinvocationPolicy sets a Mutate's or a MutateKind's
// reinvocationPolicy: Never, the default, or IfNeeded. A validating Hook
// takes no ReinvocationPolicy: it runs once, after every mutation.
func ReinvocationPolicy(p ReinvocationPolicyType) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.ReinvocationPolicy, Value: string(p)})
}

// MatchPolicyType says which requests a webhook's rules match.
type MatchPolicyType string

const (
	// Equivalent matches a request made through any version of the
	// resource, converted to the webhook's: the default.
	Equivalent MatchPolicyType = "Equivalent"
	// Exact matches the requests made through the webhook's version alone.
	Exact MatchPolicyType = "Exact"
)

// MatchPolicy sets the webhook's matchPolicy: Equivalent, the default,
// or Exact.
func MatchPolicy(p MatchPolicyType) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.MatchPolicy, Value: string(p)})
}

// MatchCondition is a CEL expression the API server evaluates before it
// calls a webhook, over object, oldObject, request, namespaceObject and
// authorizer, as a configuration's matchConditions do. Name names it in
// the API server's errors: a qualified name, unique in its Hook. A Hook
// takes its conditions with kube/webhookcel's MatchConditions.
type MatchCondition struct {
	Name, Expression string
}

// MaxMatchConditions is the most match conditions a Hook takes, as the API
// server bounds them.
const MaxMatchConditions = webhookconfig.MaxMatchConditions

// SubResources adds subresources to what the webhook admits, besides the
// objects themselves, such as status: their requests carry the resource's
// own object, decoded as the Hook's T, with Admission.SubResource naming
// them. Only those whose object is the resource's are taken: status,
// ephemeralcontainers, resize, finalize and approval. Any other, such as
// scale or exec, carries another object: admit it with
// ValidateSubResource or MutateSubResource, typed on that object.
func SubResources(names ...string) HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.SubResources, Names: names})
}

// IncludeOwnNamespace keeps the App's own namespace in the webhook of a
// Kind, such as Pods, which leaves it out by default: a Fail webhook on
// Pods that the App's own pods need answered would keep them from ever
// starting again once they are all down. Set it only for a webhook that
// must see the App's namespace too and can afford to. A Resource's Hook
// takes no IncludeOwnNamespace: it admits every namespace already.
func IncludeOwnNamespace() HookOption {
	return hookopt.New(webhookconfig.Option{Kind: webhookconfig.IncludeOwnNamespace})
}

// options returns what domain/webhookconfig reads of opts.
func options(opts []HookOption) []webhookconfig.Option {
	if opts == nil {
		return nil
	}
	out := make([]webhookconfig.Option, len(opts))
	for i, o := range opts {
		out[i] = o.Value()
	}
	return out
}
