package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/webhookconfig"
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
// FailurePolicy, Operations, TimeoutSeconds, NamespaceSelector or
// ObjectSelector. A Hook takes each at most once.
type HookOption struct {
	o webhookconfig.Option
}

// FailurePolicy sets what the API server does when it can't reach the
// webhook or the webhook fails: Fail, the default, or Ignore.
func FailurePolicy(p FailurePolicyType) HookOption {
	return HookOption{webhookconfig.Option{Kind: webhookconfig.FailurePolicy, Policy: string(p)}}
}

// Operations sets the operations the webhook admits, in place of the
// default Create and Update.
func Operations(ops ...Operation) HookOption {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	return HookOption{webhookconfig.Option{Kind: webhookconfig.Operations, Operations: names}}
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
	return HookOption{webhookconfig.Option{Kind: webhookconfig.TimeoutSeconds, Timeout: seconds}}
}

// NamespaceSelector limits the webhook to the objects in the namespaces
// whose labels s selects, and the cluster-scoped objects, as the API
// server's namespaceSelector does.
func NamespaceSelector(s metav1.LabelSelector) HookOption {
	return HookOption{webhookconfig.Option{Kind: webhookconfig.NamespaceSelector, Selector: s}}
}

// ObjectSelector limits the webhook to the objects whose labels s
// selects, as the API server's objectSelector does.
func ObjectSelector(s metav1.LabelSelector) HookOption {
	return HookOption{webhookconfig.Option{Kind: webhookconfig.ObjectSelector, Selector: s}}
}

// String describes the option as the end user wrote it, for errors.
func (o HookOption) String() string { return o.o.String() }

// options returns what domain/webhookconfig reads of opts.
func options(opts []HookOption) []webhookconfig.Option {
	if opts == nil {
		return nil
	}
	out := make([]webhookconfig.Option, len(opts))
	for i, o := range opts {
		out[i] = o.o
	}
	return out
}
