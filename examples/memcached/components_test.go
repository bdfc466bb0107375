package memcached

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
)

// metricsComponent is the kustomize component that secures /metrics.
const metricsComponent = "components/metrics"

// readYAML reads the file at path, strictly, into out, or every document
// of it into a slice when out is a *[]map[string]any.
func readYAML(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	if docs, ok := out.(*[]map[string]any); ok {
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var m map[string]any
			require.NoError(t, sigsyaml.Unmarshal([]byte(doc), &m), path)
			*docs = append(*docs, m)
		}
		return
	}
	require.NoError(t, sigsyaml.UnmarshalStrict(b, out), path)
}

// TestMetricsComponent checks components/metrics against the base it
// patches and the operator that reads it: every file it names exists; the
// patch sets the variables readSettings reads, so that /metrics is served
// over TLS with the mounted webhooks' certificate and checked through the
// API server; the Service selects the operator's pods and targets their
// metrics port; the ServiceMonitor selects the Service by its labels and
// scrapes its port over HTTPS with a bearer token; and the RBAC grants the
// operator's reviews and a scraper's get on /metrics.
func TestMetricsComponent(t *testing.T) {
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Patches    []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	readYAML(t, filepath.Join(metricsComponent, "kustomization.yaml"), &k)
	require.Equal(t, "kustomize.config.k8s.io/v1alpha1", k.APIVersion)
	require.Equal(t, "Component", k.Kind)
	require.ElementsMatch(t, []string{"rbac.yaml", "service.yaml", "servicemonitor.yaml"}, k.Resources)
	require.Len(t, k.Patches, 1)

	var base, patch appsv1.Deployment
	readYAML(t, "deploy/deployment.yaml", &base)
	readYAML(t, filepath.Join(metricsComponent, k.Patches[0].Path), &patch)
	require.Equal(t, base.Name, patch.Name)
	require.Equal(t, base.Namespace, patch.Namespace)
	container := base.Spec.Template.Spec.Containers[0]
	require.Equal(t, container.Name, patch.Spec.Template.Spec.Containers[0].Name)

	// The operator's settings with the base's environment and the patch's.
	env := apptest.Env{}
	for _, e := range append(slices.Clone(container.Env), patch.Spec.Template.Spec.Containers[0].Env...) {
		env[e.Name] = e.Value
	}
	// The downward API's, which the kubelet fills.
	env["POD_NAMESPACE"], env["POD_NAME"] = base.Namespace, "memcached-controller-0"
	s, err := readSettings(t.Context(), &app.Setup{Process: app.Process{Environment: env}})
	require.NoError(t, err)
	require.True(t, s.metricsAuth, "METRICS_AUTH")
	require.NotNil(t, s.metrics.TLS, "METRICS_CERT_FILE and METRICS_KEY_FILE")
	require.Equal(t, s.webhooks.TLS.CertFile, s.metrics.TLS.CertFile, "the webhooks' certificate, which the base mounts")
	require.Equal(t, s.webhooks.TLS.KeyFile, s.metrics.TLS.KeyFile)
	require.NoError(t, s.metrics.TLS.Check())

	var svc corev1.Service
	readYAML(t, filepath.Join(metricsComponent, "service.yaml"), &svc)
	require.Equal(t, base.Namespace, svc.Namespace)
	require.Equal(t, base.Spec.Selector.MatchLabels, svc.Spec.Selector, "the operator's pods")
	require.Len(t, svc.Spec.Ports, 1)
	port := svc.Spec.Ports[0]
	require.True(t, slices.ContainsFunc(container.Ports, func(p corev1.ContainerPort) bool { return p.Name == port.TargetPort.StrVal }),
		"the Service targets the container's port %q", port.TargetPort.StrVal)

	var monitors []map[string]any
	readYAML(t, filepath.Join(metricsComponent, "servicemonitor.yaml"), &monitors)
	require.Len(t, monitors, 1)
	m := monitors[0]
	require.Equal(t, "ServiceMonitor", m["kind"])
	spec := m["spec"].(map[string]any)
	matchLabels := spec["selector"].(map[string]any)["matchLabels"].(map[string]any)
	for key, value := range matchLabels {
		require.Equal(t, value, svc.Labels[key], "the ServiceMonitor selects the Service by %s", key)
	}
	endpoint := spec["endpoints"].([]any)[0].(map[string]any)
	require.Equal(t, port.Name, endpoint["port"])
	require.Equal(t, "https", endpoint["scheme"])
	require.Equal(t, "/metrics", endpoint["path"])
	require.NotEmpty(t, endpoint["bearerTokenFile"], "a scrape carries Prometheus' token")

	var rbac []map[string]any
	readYAML(t, filepath.Join(metricsComponent, "rbac.yaml"), &rbac)
	roles := map[string][]rbacv1.PolicyRule{}
	var bound []string
	for _, obj := range rbac {
		b, err := sigsyaml.Marshal(obj)
		require.NoError(t, err)
		switch obj["kind"] {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			require.NoError(t, sigsyaml.UnmarshalStrict(b, &r))
			roles[r.Name] = r.Rules
		case "ClusterRoleBinding":
			var rb rbacv1.ClusterRoleBinding
			require.NoError(t, sigsyaml.UnmarshalStrict(b, &rb))
			require.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: base.Spec.Template.Spec.ServiceAccountName, Namespace: base.Namespace}}, rb.Subjects)
			bound = append(bound, rb.RoleRef.Name)
		}
	}
	require.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}, roles["memcached-controller-metrics-auth"])
	require.Equal(t, []string{"memcached-controller-metrics-auth"}, bound, "the operator's reviews, bound to its ServiceAccount")
	require.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, roles["memcached-metrics-reader"])
}
