package webhookconfig

import (
	"errors"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Configurations returns the ValidatingWebhookConfiguration and the
// MutatingWebhookConfiguration, both named name, that tell the API server
// to call hooks' webhooks through client: nil for a type of which hooks
// have none. Each Hook is one webhook, in hooks' order, named by its
// WebhookName, matching its resource's operations (and subresources) in
// any of its versions (matchPolicy Equivalent) unless its options say
// otherwise, with no side effects unless on a dry run when they say so,
// and, for a namespaced Kind's Hook, in every namespace but client's
// OwnNamespace.
// Conversion Hooks are left out: the CRD carries them. Both have their
// apiVersion and kind.
//
// name and client must have no mistakes, as kube checks. It fails with
// one error naming every mistake Mistakes finds in hooks.
func Configurations(name string, client Client, hooks []Hook) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration, error) {
	settings, errs := Mistakes(hooks)
	for i, h := range hooks {
		if i < len(settings) && leavesOwnNamespaceOut(h, settings[i], client) && selectsOnly(settings[i].Namespaces, client.OwnNamespace) {
			errs = append(errs, fmt.Errorf("Hook %d, %v: its NamespaceSelector selects the App's own namespace %s alone, which the webhook of a Kind leaves out, so it would never be called: give it IncludeOwnNamespace, or select other namespaces", i, h, client.OwnNamespace))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}

	var validating []admissionregistrationv1.ValidatingWebhook
	var mutating []admissionregistrationv1.MutatingWebhook
	for i, h := range hooks {
		switch w := webhook(h, settings[i], client); h.Type {
		case Validate:
			validating = append(validating, w)
		case Mutate:
			mutating = append(mutating, admissionregistrationv1.MutatingWebhook{
				Name: w.Name, ClientConfig: w.ClientConfig, Rules: w.Rules,
				FailurePolicy: w.FailurePolicy, MatchPolicy: w.MatchPolicy,
				NamespaceSelector: w.NamespaceSelector, ObjectSelector: w.ObjectSelector,
				SideEffects: w.SideEffects, TimeoutSeconds: w.TimeoutSeconds, AdmissionReviewVersions: w.AdmissionReviewVersions,
				MatchConditions: w.MatchConditions, ReinvocationPolicy: settings[i].Reinvocation,
			})
		}
	}
	typeMeta := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: kind}
	}
	var v *admissionregistrationv1.ValidatingWebhookConfiguration
	if len(validating) > 0 {
		v = &admissionregistrationv1.ValidatingWebhookConfiguration{
			TypeMeta: typeMeta("ValidatingWebhookConfiguration"), ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: validating,
		}
	}
	var m *admissionregistrationv1.MutatingWebhookConfiguration
	if len(mutating) > 0 {
		m = &admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta: typeMeta("MutatingWebhookConfiguration"), ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: mutating,
		}
	}
	return v, m, nil
}

// webhook returns h's webhook, as s and client say, in the shape of a
// validating one; a mutating one has the same fields and no others set.
func webhook(h Hook, s Settings, client Client) admissionregistrationv1.ValidatingWebhook {
	scope := admissionregistrationv1.ScopeType(h.Scope)
	resources := []string{h.resource("/")}
	for _, sub := range s.SubResources {
		resources = append(resources, h.Plural+"/"+sub)
	}
	namespaces := s.Namespaces
	if leavesOwnNamespaceOut(h, s, client) {
		namespaces = withoutNamespace(namespaces, client.OwnNamespace)
	}
	return admissionregistrationv1.ValidatingWebhook{
		Name: h.WebhookName(), ClientConfig: client.Admission(h.Path()),
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: s.Operations,
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{h.Group}, APIVersions: []string{h.Version},
				Resources: resources, Scope: &scope,
			},
		}},
		FailurePolicy: &s.Policy, MatchPolicy: &s.MatchPolicy,
		NamespaceSelector: namespaces, ObjectSelector: s.Objects,
		SideEffects: &s.SideEffects, TimeoutSeconds: &s.Timeout, AdmissionReviewVersions: []string{"v1"},
		MatchConditions: s.Conditions,
	}
}

// namespaceNameLabel is the label the API server puts on every
// namespace, its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// withoutNamespace returns a copy of sel, nil for every namespace, that
// leaves the namespace ns out too, by the kubernetes.io/metadata.name
// label the API server puts on every namespace.
func withoutNamespace(sel *metav1.LabelSelector, ns string) *metav1.LabelSelector {
	out := &metav1.LabelSelector{}
	if sel != nil {
		out = sel.DeepCopy()
	}
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: namespaceNameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{ns},
	})
	return out
}

// leavesOwnNamespaceOut reports whether h's webhook leaves client's
// OwnNamespace out: a Kind's namespaced objects do, unless s says to
// include it. A cluster-scoped object is in no namespace, and a
// Namespace's own labels would match the selector, leaving the App's own
// Namespace out of a webhook on Namespaces.
func leavesOwnNamespaceOut(h Hook, s Settings, client Client) bool {
	return h.OfKind && h.Scope == string(admissionregistrationv1.NamespacedScope) &&
		!s.IncludeOwnNamespace && client.OwnNamespace != ""
}

// selectsOnly reports whether sel selects the namespace ns alone, by
// the kubernetes.io/metadata.name label, in its labels or in an In
// requirement.
func selectsOnly(sel *metav1.LabelSelector, ns string) bool {
	if sel == nil {
		return false
	}
	if v, ok := sel.MatchLabels[namespaceNameLabel]; ok {
		return v == ns
	}
	for _, r := range sel.MatchExpressions {
		if r.Key == namespaceNameLabel && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) > 0 &&
			!slices.ContainsFunc(r.Values, func(v string) bool { return v != ns }) {
			return true
		}
	}
	return false
}
