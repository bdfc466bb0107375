package webhookconfig_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/domain/webhookconfig"
)

func hook(typ webhookconfig.Type, opts ...webhookconfig.Option) webhookconfig.Hook {
	return webhookconfig.Hook{
		Type: typ, Desc: "Validate(memcacheds)", Group: "cache.example.com", Version: "v1", Plural: "memcacheds",
		Kind: "Memcached", Scope: "Namespaced", Options: opts,
	}
}

func TestHook_names_its_path_and_webhook(t *testing.T) {
	for _, c := range []struct {
		hook        webhookconfig.Hook
		path, name  string
		description string
	}{
		{hook(webhookconfig.Validate), "/validate/cache.example.com/v1/memcacheds", "validate.v1.memcacheds.cache.example.com", "Validate(memcacheds)"},
		{hook(webhookconfig.Mutate), "/mutate/cache.example.com/v1/memcacheds", "mutate.v1.memcacheds.cache.example.com", "Validate(memcacheds)"},
		{hook(webhookconfig.Conversion), "/convert/cache.example.com/memcacheds", "convert.memcacheds.cache.example.com", "Validate(memcacheds)"},
		{webhookconfig.Hook{Type: webhookconfig.Validate, Version: "v1", Plural: "pods"}, "/validate/core/v1/pods", "validate.v1.pods.core", ""},
		{webhookconfig.Hook{}, "", "validate...core", "Hook{}"},
	} {
		require.Equal(t, c.path, c.hook.Path())
		require.Equal(t, c.name, c.hook.WebhookName())
		require.Equal(t, c.description, c.hook.String())
	}
}

func TestHook_Settings_defaults(t *testing.T) {
	s, errs := hook(webhookconfig.Validate).Settings()
	require.Empty(t, errs)
	require.Equal(t, webhookconfig.Settings{
		Policy:      admissionregistrationv1.Fail,
		Operations:  []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Timeout:     webhookconfig.DefaultTimeoutSeconds,
		SideEffects: admissionregistrationv1.SideEffectClassNone,
		MatchPolicy: admissionregistrationv1.Equivalent,
	}, s)
}

func TestHook_Settings_applies_each_option(t *testing.T) {
	ns := metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	obj := metav1.LabelSelector{MatchLabels: map[string]string{"tier": "b"}}
	exec := hook(webhookconfig.Validate,
		webhookconfig.Option{Kind: webhookconfig.FailurePolicy, Policy: "Ignore"},
		webhookconfig.Option{Kind: webhookconfig.Operations, Operations: []string{"DELETE", "CONNECT"}},
		webhookconfig.Option{Kind: webhookconfig.TimeoutSeconds, Timeout: 30},
		webhookconfig.Option{Kind: webhookconfig.NamespaceSelector, Selector: ns},
		webhookconfig.Option{Kind: webhookconfig.ObjectSelector, Selector: obj},
	)
	exec.SubResource = "exec" // CONNECT is a subresource's alone
	s, errs := exec.Settings()
	require.Empty(t, errs)
	require.Equal(t, webhookconfig.Settings{
		Policy:     admissionregistrationv1.Ignore,
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete, admissionregistrationv1.Connect},
		Timeout:    30, Namespaces: &ns, Objects: &obj,
		SideEffects: admissionregistrationv1.SideEffectClassNone,
		MatchPolicy: admissionregistrationv1.Equivalent,
	}, s)
}

func TestHook_Settings_names_every_mistake(t *testing.T) {
	for _, c := range []struct {
		name string
		hook webhookconfig.Hook
		want []string
	}{
		{"the zero Hook", webhookconfig.Hook{}, []string{"the zero Hook: make Hooks with Validate"}},
		{"its own mistakes", webhookconfig.Hook{Type: webhookconfig.Validate, Mistakes: []error{errors.New("the function is nil")}},
			[]string{"the function is nil"}},
		{"a zero option and a second one", hook(webhookconfig.Validate, webhookconfig.Option{},
			webhookconfig.Option{Kind: webhookconfig.TimeoutSeconds, Timeout: 5}, webhookconfig.Option{Kind: webhookconfig.TimeoutSeconds, Timeout: 31}),
			[]string{
				"option 0, HookOption{}: the zero HookOption",
				"option 2, TimeoutSeconds(31): a Hook takes one of each option, and this is a second",
				"option 2, TimeoutSeconds(31): the timeout is not from 1 to 30 seconds",
			}},
		{"a bad policy", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.FailurePolicy, Policy: "Sometimes"}),
			[]string{`option 0, FailurePolicy("Sometimes"): the policy is neither Fail nor Ignore`}},
		{"bad operations", hook(webhookconfig.Mutate, webhookconfig.Option{Kind: webhookconfig.Operations, Operations: []string{"CREATE", "CREATE", "PATCH", "CONNECT"}}),
			[]string{
				"CREATE is named twice",
				`"PATCH" is not an operation: pass kube.Create, Update, Delete or Connect`,
				"a Mutate may not take CONNECT: its requests have no object to change",
			}},
		{"no operation", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.Operations}),
			[]string{"option 0, Operations([]): no operation"}},
		{"bad selectors", hook(webhookconfig.Validate,
			webhookconfig.Option{Kind: webhookconfig.ObjectSelector, Selector: metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}},
			webhookconfig.Option{Kind: webhookconfig.NamespaceSelector, Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}}),
			[]string{`option 0, ObjectSelector(<error>): key: Invalid value: "a b"`, `option 1, NamespaceSelector(<error>): "Near" is not a valid label selector operator`}},
		{"a Conversion with options", hook(webhookconfig.Conversion, webhookconfig.Option{Kind: webhookconfig.TimeoutSeconds, Timeout: 5}),
			[]string{"a Conversion takes no option"}},
		{"a name that is no DNS subdomain", webhookconfig.Hook{Type: webhookconfig.Validate, Group: "Cache", Version: "v1", Plural: "memcacheds"},
			[]string{`the webhook's name "validate.v1.memcacheds.Cache": `}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := c.hook.Settings()
			err := errors.Join(errs...)
			require.Len(t, errs, len(c.want), "%v", err)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestMistakes_names_each_Hook_and_two_at_one_path(t *testing.T) {
	settings, errs := webhookconfig.Mistakes([]webhookconfig.Hook{hook(webhookconfig.Validate), {}, hook(webhookconfig.Validate)})
	require.Len(t, settings, 3)
	err := errors.Join(errs...)
	require.ErrorContains(t, err, "kube: Hook 1, Hook{}: the zero Hook")
	require.ErrorContains(t, err, "kube: Hook 2, Validate(memcacheds): Hook 0, Validate(memcacheds), is served at /validate/cache.example.com/v1/memcacheds too: one Hook a path")
	require.Len(t, errs, 2)
}

func TestClient_writes_the_client_configs(t *testing.T) {
	path := "/validate/cache.example.com/v1/memcacheds"
	service := webhookconfig.Client{Service: &webhookconfig.Service{Namespace: "shop", Name: "hooks", Port: 8443, Path: "/base/"}, CABundle: []byte("pem")}
	a := service.Admission(path)
	require.Nil(t, a.URL)
	require.Equal(t, "/base/validate/cache.example.com/v1/memcacheds", *a.Service.Path)
	require.Equal(t, int32(8443), *a.Service.Port)
	require.Equal(t, []byte("pem"), a.CABundle)
	c := service.Conversion(path)
	require.Equal(t, "shop", c.Service.Namespace)
	require.Equal(t, "hooks", c.Service.Name)
	require.Equal(t, "/base/validate/cache.example.com/v1/memcacheds", *c.Service.Path)
	require.Equal(t, int32(8443), *c.Service.Port)

	noPort := webhookconfig.Client{Service: &webhookconfig.Service{Namespace: "shop", Name: "hooks"}}
	require.Nil(t, noPort.Admission(path).Service.Port, "0 is the API server's default")

	url := webhookconfig.Client{URL: "https://127.0.0.1:9443/"}
	require.Equal(t, "https://127.0.0.1:9443"+path, *url.Admission(path).URL)
	require.Equal(t, "https://127.0.0.1:9443"+path, *url.Conversion(path).URL)
	require.Nil(t, url.Conversion(path).Service)
}

func TestConfigurations_writes_one_webhook_a_Hook(t *testing.T) {
	client := webhookconfig.Client{URL: "https://hooks.example.com"}
	v, m, err := webhookconfig.Configurations("memcached", client, []webhookconfig.Hook{
		hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.TimeoutSeconds, Timeout: 5}),
		hook(webhookconfig.Conversion),
		{Type: webhookconfig.Mutate, Desc: "MutateKind(pods.v1.core)", Version: "v1", Plural: "pods", Kind: "Pod", Scope: "Namespaced"},
	})
	require.NoError(t, err)
	require.Equal(t, "ValidatingWebhookConfiguration", v.Kind)
	require.Equal(t, "admissionregistration.k8s.io/v1", v.APIVersion)
	require.Equal(t, "memcached", v.Name)
	require.Len(t, v.Webhooks, 1)
	w := v.Webhooks[0]
	require.Equal(t, "validate.v1.memcacheds.cache.example.com", w.Name)
	require.Equal(t, "https://hooks.example.com/validate/cache.example.com/v1/memcacheds", *w.ClientConfig.URL)
	require.Equal(t, int32(5), *w.TimeoutSeconds)
	require.Equal(t, admissionregistrationv1.Equivalent, *w.MatchPolicy)
	require.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
	require.Equal(t, []string{"cache.example.com"}, w.Rules[0].APIGroups)

	require.Equal(t, "MutatingWebhookConfiguration", m.Kind)
	require.Len(t, m.Webhooks, 1)
	require.Equal(t, "mutate.v1.pods.core", m.Webhooks[0].Name)
	require.Equal(t, []string{""}, m.Webhooks[0].Rules[0].APIGroups)
	require.Equal(t, int32(webhookconfig.DefaultTimeoutSeconds), *m.Webhooks[0].TimeoutSeconds)

	v, m, err = webhookconfig.Configurations("memcached", client, []webhookconfig.Hook{hook(webhookconfig.Conversion)})
	require.NoError(t, err)
	require.Nil(t, v, "a Conversion is the CRD's")
	require.Nil(t, m)

	_, _, err = webhookconfig.Configurations("memcached", client, []webhookconfig.Hook{{}})
	require.ErrorContains(t, err, "the zero Hook")
}

func TestHook_Settings_applies_the_options_kubebuilder_users_set(t *testing.T) {
	var checked []string
	check := func(expr string) error { checked = append(checked, expr); return nil }
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	s, errs := hook(webhookconfig.Mutate,
		webhookconfig.Option{Kind: webhookconfig.SideEffects, Value: "NoneOnDryRun"},
		webhookconfig.Option{Kind: webhookconfig.ReinvocationPolicy, Value: "IfNeeded"},
		webhookconfig.Option{Kind: webhookconfig.MatchPolicy, Value: "Exact"},
		webhookconfig.Option{Kind: webhookconfig.MatchConditions, Conditions: []webhookconfig.Condition{{Name: "not-mine", Expression: "true"}},
			Compiler: func() webhookconfig.Check { return check }},
		webhookconfig.Option{Kind: webhookconfig.SubResources, Names: []string{"status"}},
	).Settings()
	require.Empty(t, errs)
	require.Equal(t, []string{"true"}, checked, "each expression is compiled")
	require.Equal(t, admissionregistrationv1.SideEffectClassNoneOnDryRun, s.SideEffects)
	require.Equal(t, &ifNeeded, s.Reinvocation)
	require.Equal(t, admissionregistrationv1.Exact, s.MatchPolicy)
	require.Equal(t, []admissionregistrationv1.MatchCondition{{Name: "not-mine", Expression: "true"}}, s.Conditions)
	require.Equal(t, []string{"status"}, s.SubResources)
}

func TestHook_Settings_names_every_mistake_in_the_new_options(t *testing.T) {
	failing := func() webhookconfig.Check { return func(string) error { return errors.New("must evaluate to bool") } }
	many := make([]webhookconfig.Condition, webhookconfig.MaxMatchConditions+1)
	for i := range many {
		many[i] = webhookconfig.Condition{Name: fmt.Sprintf("c%d", i), Expression: "true"}
	}
	for _, c := range []struct {
		name string
		hook webhookconfig.Hook
		want []string
	}{
		{"CONNECT without a subresource", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.Operations, Operations: []string{"CONNECT"}}),
			[]string{"CONNECT is made to a subresource alone, such as pods/exec"}},
		{"bad classes and policies", hook(webhookconfig.Validate,
			webhookconfig.Option{Kind: webhookconfig.SideEffects, Value: "Some"},
			webhookconfig.Option{Kind: webhookconfig.ReinvocationPolicy, Value: "Always"},
			webhookconfig.Option{Kind: webhookconfig.MatchPolicy, Value: "Loose"}),
			[]string{
				`option 0, SideEffects("Some"): the class is neither None nor NoneOnDryRun`,
				`option 1, ReinvocationPolicy("Always"): the policy is neither Never nor IfNeeded`,
				`option 1, ReinvocationPolicy("Always"): only a Mutate is reinvoked`,
				`option 2, MatchPolicy("Loose"): the policy is neither Equivalent nor Exact`,
			}},
		{"bad conditions", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.MatchConditions, Conditions: []webhookconfig.Condition{
			{Expression: "true"}, {Name: "a b", Expression: "true"}, {Name: "x", Expression: " "}, {Name: "x", Expression: "object"},
		}, Compiler: failing}), []string{
			"condition 0: the name is missing",
			`condition 1: the name "a b": `,
			"condition 1 (a b): must evaluate to bool",
			"condition 2 (x): the expression is empty",
			`condition 3: the name "x" is given twice`,
			"condition 3 (x): must evaluate to bool",
			"condition 0 (): must evaluate to bool",
		}},
		{"too many conditions", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.MatchConditions, Conditions: many}),
			[]string{"65 conditions, more than the 64 the API server takes"}},
		{"no condition", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.MatchConditions}),
			[]string{"no condition"}},
		{"a subresource of another object", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.SubResources, Names: []string{"status", "scale", "status"}}),
			[]string{"the requests to memcacheds/scale carry no Memcached, which this Hook decodes: admit them with kube.ValidateSubResource", "status is named twice"}},
		{"IncludeOwnNamespace on a Resource's Hook", hook(webhookconfig.Validate, webhookconfig.Option{Kind: webhookconfig.IncludeOwnNamespace}),
			[]string{"only a Kind's webhook leaves the App's own namespace out"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := c.hook.Settings()
			err := errors.Join(errs...)
			require.Len(t, errs, len(c.want), "%v", err)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestConfigurations_writes_subresources_options_and_leaves_the_own_namespace_out(t *testing.T) {
	client := webhookconfig.Client{URL: "https://hooks.example.com", OwnNamespace: "memcached-system"}
	team := metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	pods := webhookconfig.Hook{Type: webhookconfig.Validate, Desc: "ValidateKind(pods.v1.core)", Version: "v1", Plural: "pods", Kind: "Pod", Scope: "Namespaced", OfKind: true,
		Options: []webhookconfig.Option{{Kind: webhookconfig.NamespaceSelector, Selector: team}, {Kind: webhookconfig.SubResources, Names: []string{"status"}}}}
	exec := webhookconfig.Hook{Type: webhookconfig.Validate, Desc: "ValidateSubResource(pods/exec.v1.core)", Version: "v1", Plural: "pods", SubResource: "exec", Kind: "PodExecOptions", Scope: "Namespaced", OfKind: true,
		Options: []webhookconfig.Option{{Kind: webhookconfig.Operations, Operations: []string{"CONNECT"}}, {Kind: webhookconfig.IncludeOwnNamespace}}}
	scale := webhookconfig.Hook{Type: webhookconfig.Mutate, Desc: "MutateSubResource(deployments/scale.v1.apps)", Group: "apps", Version: "v1", Plural: "deployments", SubResource: "scale", Kind: "Scale", Scope: "Namespaced", OfKind: true,
		Options: []webhookconfig.Option{{Kind: webhookconfig.ReinvocationPolicy, Value: "IfNeeded"}, {Kind: webhookconfig.MatchConditions, Conditions: []webhookconfig.Condition{{Name: "n", Expression: "true"}}}}}
	v, m, err := webhookconfig.Configurations("x", client, []webhookconfig.Hook{pods, exec, scale, hook(webhookconfig.Validate)})
	require.NoError(t, err)
	require.Len(t, v.Webhooks, 3)
	w := v.Webhooks[0]
	require.Equal(t, []string{"pods", "pods/status"}, w.Rules[0].Resources)
	require.Equal(t, &metav1.LabelSelector{MatchLabels: team.MatchLabels, MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"memcached-system"}},
	}}, w.NamespaceSelector, "a Kind's webhook leaves the App's namespace out, with the selector it was given")
	require.Equal(t, map[string]string{"team": "a"}, team.MatchLabels, "the option's selector is not changed")
	require.Empty(t, team.MatchExpressions)

	w = v.Webhooks[1]
	require.Equal(t, "validate.v1.pods.exec.core", w.Name)
	require.Equal(t, "https://hooks.example.com/validate/core/v1/pods/exec", *w.ClientConfig.URL)
	require.Equal(t, []string{"pods/exec"}, w.Rules[0].Resources)
	require.Nil(t, w.NamespaceSelector, "IncludeOwnNamespace keeps it")
	require.Nil(t, v.Webhooks[2].NamespaceSelector, "a Resource's webhook admits every namespace")

	mw := m.Webhooks[0]
	require.Equal(t, "mutate.v1.deployments.scale.apps", mw.Name)
	require.Equal(t, []string{"deployments/scale"}, mw.Rules[0].Resources)
	require.Equal(t, admissionregistrationv1.IfNeededReinvocationPolicy, *mw.ReinvocationPolicy)
	require.Equal(t, []admissionregistrationv1.MatchCondition{{Name: "n", Expression: "true"}}, mw.MatchConditions)
	require.NotNil(t, mw.NamespaceSelector)

	client.OwnNamespace = ""
	v, _, err = webhookconfig.Configurations("x", client, []webhookconfig.Hook{pods})
	require.NoError(t, err)
	require.Equal(t, &team, v.Webhooks[0].NamespaceSelector, "no OwnNamespace, nothing left out")
}

func TestMistakes_names_two_Hooks_with_one_webhook_name(t *testing.T) {
	a := webhookconfig.Hook{Type: webhookconfig.Validate, Desc: "a", Group: "apps", Version: "v1", Plural: "deployments", SubResource: "scale", Kind: "Scale", Scope: "Namespaced"}
	b := webhookconfig.Hook{Type: webhookconfig.Validate, Desc: "b", Group: "scale.apps", Version: "v1", Plural: "deployments", Kind: "Deployment", Scope: "Namespaced"}
	_, errs := webhookconfig.Mistakes([]webhookconfig.Hook{a, b})
	require.Len(t, errs, 1)
	require.ErrorContains(t, errs[0], "kube: Hook 1, b: Hook 0, a, has the webhook name validate.v1.deployments.scale.apps too: one Hook a name")
}
