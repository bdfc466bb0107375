package kube

import (
	"errors"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/loam-dev/loam/domain/webhookconfig"
)

// WebhookConfigurations returns the ValidatingWebhookConfiguration and
// the MutatingWebhookConfiguration, both named name, that tell the API
// server to call hooks' webhooks through client: nil for a type of which
// hooks have none. Each Hook is one webhook, in hooks' order, named
// validate.<version>.<plural>.<group> or mutate.…, with core for the core
// group, matching its resource's create and update (or its Operations,
// and its SubResources) in any of its versions (matchPolicy Equivalent,
// so the API server converts an object of another version to the
// webhook's first, unless MatchPolicy says Exact), with no side effects
// (unless SideEffects says NoneOnDryRun) and its match conditions
// (webhookcel.MatchConditions) and ReinvocationPolicy. A Kind's webhook
// leaves client's OwnNamespace out, by a namespaceSelector requirement
// kubernetes.io/metadata.name NotIn [it] added to its NamespaceSelector,
// unless IncludeOwnNamespace says not to. Conversion Hooks are left out: the CRD carries them.
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
	v, m, err := webhookconfig.Configurations(name, client.config(), configs(hooks))
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, nil, err
	}
	return v, m, nil
}
