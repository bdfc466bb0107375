package kube_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/kube"
)

var podKind = kube.Kind[corev1.Pod]{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Scope: kube.Namespaced}

func validateMemcached(context.Context, kube.Admission[memcachedObject]) ([]string, error) {
	return nil, nil
}

func defaultMemcached(context.Context, kube.Admission[memcachedObject], *memcachedObject) ([]string, error) {
	return nil, nil
}

func validatePod(context.Context, kube.Admission[corev1.Pod]) ([]string, error) { return nil, nil }

func defaultPod(context.Context, kube.Admission[corev1.Pod], *corev1.Pod) ([]string, error) {
	return nil, nil
}

// webhookGolden compares got, as YAML, with testdata/name, or rewrites it with
// -update.
func webhookGolden(t *testing.T, name string, got any) {
	t.Helper()
	out, err := yaml.Marshal(got)
	require.NoError(t, err)
	path := "testdata/" + name
	if *update {
		require.NoError(t, os.WriteFile(path, out, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run %s -update to write it", t.Name())
	require.Equal(t, string(want), string(out), "%s is out of date: run go test -run %s -update", path, t.Name())
}

func TestWebhookConfigurations_golden(t *testing.T) {
	hooks := []kube.Hook{
		kube.Mutate(Memcached, defaultMemcached),
		kube.Validate(Memcached, validateMemcached, kube.Operations(kube.Create, kube.Update, kube.Delete)),
		kube.MutateKind(podKind, defaultPod,
			kube.FailurePolicy(kube.Ignore), kube.TimeoutSeconds(5),
			kube.ObjectSelector(metav1.LabelSelector{MatchLabels: map[string]string{"app": "memcached"}})),
		kube.ValidateKind(podKind, validatePod,
			kube.NamespaceSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}},
			}})),
	}
	t.Run("Service", func(t *testing.T) {
		client := kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "memcached-webhooks"}}
		v, m, err := kube.WebhookConfigurations("memcached-operator", client, hooks...)
		require.NoError(t, err)
		webhookGolden(t, "webhooks-validating.yaml", v)
		webhookGolden(t, "webhooks-mutating.yaml", m)
	})
	t.Run("URL", func(t *testing.T) {
		client := kube.WebhookClient{URL: "https://127.0.0.1:9443/hooks", CABundle: []byte("PEM")}
		v, m, err := kube.WebhookConfigurations("memcached-operator", client, hooks[1])
		require.NoError(t, err)
		require.Nil(t, m, "no mutating hook, no configuration")
		webhookGolden(t, "webhooks-url.yaml", v)
	})
}

func TestHook_Path(t *testing.T) {
	for _, c := range []struct {
		hook kube.Hook
		want string
	}{
		{kube.Validate(Memcached, validateMemcached), "/validate/cache.example.com/v1alpha1/memcacheds"},
		{kube.Mutate(Memcached, defaultMemcached), "/mutate/cache.example.com/v1alpha1/memcacheds"},
		{kube.ValidateKind(podKind, validatePod), "/validate/core/v1/pods"},
		{kube.MutateKind(podKind, defaultPod), "/mutate/core/v1/pods"},
		{kube.Hook{}, ""},
	} {
		require.Equal(t, c.want, c.hook.Path(), "%v", c.hook)
	}
}

func TestWebhookConfigurations_names_every_mistake_at_once(t *testing.T) {
	bad := Memcached
	bad.Plural = ""
	bad.Scope = "Everywhere"
	_, _, err := kube.WebhookConfigurations("Not A Name", kube.WebhookClient{},
		kube.Hook{},
		kube.Validate[MemcachedSpec, MemcachedStatus](Memcached, nil),
		kube.Validate(bad, validateMemcached),
		kube.Mutate(Memcached, defaultMemcached, kube.Operations(kube.Delete, "PATCH"), kube.Operations()),
		kube.Validate(Memcached, validateMemcached,
			kube.FailurePolicy("Sometimes"), kube.TimeoutSeconds(0), kube.TimeoutSeconds(31),
			kube.Operations(kube.Create, kube.Create), kube.HookOption{},
			kube.ObjectSelector(metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}),
			kube.NamespaceSelector(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}})),
		kube.ValidateKind(kube.Kind[corev1.Pod]{}, validatePod),
		kube.MutateKind[corev1.Pod](podKind, nil),
	)
	require.Error(t, err)
	for _, want := range []string{
		`kube: the webhook configurations' name "Not A Name": `,
		"kube: WebhookClient names neither a Service nor a URL",
		"kube: Hook 0, Hook{}: the zero Hook",
		"kube: Hook 1, Validate(memcacheds.v1alpha1.cache.example.com): the function is nil",
		"kube: Hook 2, Validate(Memcached): Resource Memcached: the Plural is missing",
		`kube: Hook 2, Validate(Memcached): Resource Memcached: the Scope "Everywhere" is neither Namespaced nor Cluster`,
		`kube: Hook 3, Mutate(memcacheds.v1alpha1.cache.example.com): option 0, Operations(["DELETE" "PATCH"]): a Mutate may not take DELETE`,
		`option 0, Operations(["DELETE" "PATCH"]): "PATCH" is not an operation`,
		"option 1, Operations([]): a Hook takes one of each option, and this is a second",
		"option 1, Operations([]): no operation",
		"kube: Hook 4, Validate(memcacheds.v1alpha1.cache.example.com): Hook 1, Validate(memcacheds.v1alpha1.cache.example.com), is served at /validate/cache.example.com/v1alpha1/memcacheds too: one Hook a path",
		`option 0, FailurePolicy("Sometimes"): the policy is neither Fail nor Ignore`,
		"option 1, TimeoutSeconds(0): the timeout is not from 1 to 30 seconds",
		"option 2, TimeoutSeconds(31): a Hook takes one of each option, and this is a second",
		"option 2, TimeoutSeconds(31): the timeout is not from 1 to 30 seconds",
		`option 3, Operations(["CREATE" "CREATE"]): CREATE is named twice`,
		"option 4, HookOption{}: the zero HookOption",
		`option 5, ObjectSelector(<error>): key: Invalid value: "a b"`,
		`option 6, NamespaceSelector(<error>): "Near" is not a valid label selector operator`,
		"kube: Hook 5, ValidateKind(kube.Kind[k8s.io/api/core/v1.Pod]): Kind kube.Kind[k8s.io/api/core/v1.Pod]: the GVR has no Version", // named by its Go type
		"kube: Hook 6, MutateKind(pods.v1.core): the function is nil",
	} {
		require.Contains(t, err.Error(), want)
	}
	require.NotContains(t, err.Error(), "webhook's name", "a bad Resource's or Kind's webhook name is not named again")
}

func TestWebhookConfigurations_takes_a_valid_Hook_list_only(t *testing.T) {
	client := kube.WebhookClient{URL: "https://example.com"}
	v, m, err := kube.WebhookConfigurations("x", client)
	require.NoError(t, err)
	require.Nil(t, v)
	require.Nil(t, m)
	_, _, err = kube.WebhookConfigurations("x", client, kube.Validate(Memcached, validateMemcached), kube.Validate(Memcached, validateMemcached))
	require.ErrorContains(t, err, "one Hook a path")
	require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "the second Hook alone is named: %v", err)
}
