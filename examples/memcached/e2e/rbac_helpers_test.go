package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// The files under test, read from where they are deployed and documented,
// not from a copy, so a test fails when they drift.
const (
	rbacPath       = "../deploy/rbac.yaml"
	deploymentPath = "../deploy/deployment.yaml"
	docsPath       = "../../../docs/kubernetes.md"
)

// rbacObjects are the RBAC objects of a YAML file: deploy/rbac.yaml's
// five, or the docs' ClusterRole and Role.
type rbacObjects struct {
	serviceAccount     *corev1.ServiceAccount
	clusterRole        *rbacv1.ClusterRole
	clusterRoleBinding *rbacv1.ClusterRoleBinding
	role               *rbacv1.Role
	roleBinding        *rbacv1.RoleBinding
}

// decodeRBAC decodes every document of b, failing t on a kind it doesn't
// expect or on a second object of one kind.
func decodeRBAC(t *testing.T, what string, b []byte) rbacObjects {
	t.Helper()
	var o rbacObjects
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var j json.RawMessage
		err := dec.Decode(&j)
		if errors.Is(err, io.EOF) {
			return o
		}
		require.NoError(t, err, what)
		if len(bytes.TrimSpace(j)) == 0 || string(j) == "null" {
			continue
		}
		var doc struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(j, &doc), what)
		decodeInto := func(p any, seen bool) {
			require.False(t, seen, "%s holds a second %s", what, doc.Kind)
			require.NoError(t, json.Unmarshal(j, p), "%s: %s", what, doc.Kind)
		}
		switch doc.Kind {
		case "ServiceAccount":
			decodeInto(&o.serviceAccount, o.serviceAccount != nil)
		case "ClusterRole":
			decodeInto(&o.clusterRole, o.clusterRole != nil)
		case "ClusterRoleBinding":
			decodeInto(&o.clusterRoleBinding, o.clusterRoleBinding != nil)
		case "Role":
			decodeInto(&o.role, o.role != nil)
		case "RoleBinding":
			decodeInto(&o.roleBinding, o.roleBinding != nil)
		default:
			t.Fatalf("%s holds a %s, which the test doesn't expect", what, doc.Kind)
		}
	}
}

// readRBAC returns deploy/rbac.yaml's objects, after checking that they
// are the five the test grants: a ServiceAccount, bound to the
// ClusterRole cluster-wide and to the Role in the Role's namespace, with
// rules the test's authorization check reads exactly (no wildcard, no
// resourceNames).
func readRBAC(t *testing.T) rbacObjects {
	t.Helper()
	b, err := os.ReadFile(rbacPath)
	require.NoError(t, err)
	o := decodeRBAC(t, rbacPath, b)
	require.NotNil(t, o.serviceAccount, "%s has a ServiceAccount", rbacPath)
	require.NotNil(t, o.clusterRole, "%s has a ClusterRole", rbacPath)
	require.NotNil(t, o.clusterRoleBinding, "%s has a ClusterRoleBinding", rbacPath)
	require.NotNil(t, o.role, "%s has a Role", rbacPath)
	require.NotNil(t, o.roleBinding, "%s has a RoleBinding", rbacPath)

	sa := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: o.serviceAccount.Name, Namespace: o.serviceAccount.Namespace}}
	require.Equal(t, sa, o.clusterRoleBinding.Subjects, "the ClusterRoleBinding binds the ServiceAccount")
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: o.clusterRole.Name}, o.clusterRoleBinding.RoleRef)
	require.Equal(t, sa, o.roleBinding.Subjects, "the RoleBinding binds the ServiceAccount")
	require.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: o.role.Name}, o.roleBinding.RoleRef)
	require.Equal(t, o.serviceAccount.Namespace, o.role.Namespace, "the Leases are in the operator's namespace")
	require.Equal(t, o.role.Namespace, o.roleBinding.Namespace)

	for _, r := range slices.Concat(o.clusterRole.Rules, o.role.Rules) {
		require.Len(t, r.APIGroups, 1, "one API group a rule: %v", r)
		require.Len(t, r.Resources, 1, "one resource a rule: %v", r)
		require.Empty(t, r.ResourceNames, r)
		require.Empty(t, r.NonResourceURLs, r)
		for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs) {
			require.NotContains(t, s, "*", r)
		}
	}
	return o
}

// docsRBAC returns the ClusterRole and the Role that the RBAC section of
// docs/kubernetes.md prints.
func docsRBAC(t *testing.T) rbacObjects {
	t.Helper()
	b, err := os.ReadFile(docsPath)
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## RBAC\n")
	require.True(t, ok, "%s has a section ## RBAC", docsPath)
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.NotEmpty(t, blocks, "the RBAC section prints YAML")
	var yaml strings.Builder
	for _, m := range blocks {
		yaml.WriteString("---\n" + m[1])
	}
	o := decodeRBAC(t, docsPath, []byte(yaml.String()))
	require.NotNil(t, o.clusterRole, "the RBAC section prints a ClusterRole")
	require.NotNil(t, o.role, "the RBAC section prints a Role")
	return o
}

// permission is one verb on one resource ("memcacheds/status" for a
// subresource) of an API group.
type permission struct{ group, resource, verb string }

func (p permission) String() string {
	group := p.group
	if group == "" {
		group = "core"
	}
	return p.verb + " " + group + "/" + p.resource
}

// permissions returns every verb that rules grant.
func permissions(rules []rbacv1.PolicyRule) []permission {
	var ps []permission
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					ps = append(ps, permission{g, res, v})
				}
			}
		}
	}
	return ps
}

// serviceAccountUser is the user a ServiceAccount's token authenticates
// as.
func serviceAccountUser(ns, name string) string {
	return "system:serviceaccount:" + ns + ":" + name
}

// grant binds the ServiceAccount of rbac.yaml, in ns instead of its own
// namespace, to clusterRules and roleRules as rbac.yaml binds its
// ClusterRole and Role: the first cluster-wide, under a ClusterRole of
// the namespace's own name, since ClusterRoles are the cluster's, and the
// second in ns. It waits until the API server authorizes exactly what
// they grant of what rbac.yaml does, and returns a kubeconfig of the
// ServiceAccount's token.
func grant(t *testing.T, c *kubetest.Cluster, ns string, f rbacObjects, clusterRules, roleRules []rbacv1.PolicyRule) []byte {
	t.Helper()
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	rbac := admin.RbacV1()
	name := f.serviceAccount.Name

	cr := f.clusterRole.DeepCopy()
	cr.Name, cr.Rules = ns+"-"+cr.Name, clusterRules
	crb := f.clusterRoleBinding.DeepCopy()
	crb.Name, crb.RoleRef.Name = cr.Name, cr.Name
	crb.Subjects[0].Namespace = ns
	_, err = rbac.ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = rbac.ClusterRoles().Delete(t.Context(), cr.Name, metav1.DeleteOptions{})
	})
	_, err = rbac.ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = rbac.ClusterRoleBindings().Delete(t.Context(), crb.Name, metav1.DeleteOptions{})
	})

	role := f.role.DeepCopy()
	role.Namespace, role.Rules = ns, roleRules
	rb := f.roleBinding.DeepCopy()
	rb.Namespace = ns
	rb.Subjects[0].Namespace = ns
	_, err = rbac.Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = rbac.RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
	require.NoError(t, err)

	token, err := c.ServiceAccountToken(ctx, ns, name)
	require.NoError(t, err)
	waitAuthorized(t, admin, ns, name, f, clusterRules, roleRules)

	config, err := clientcmd.Load(c.Kubeconfig())
	require.NoError(t, err)
	config.AuthInfos = map[string]*clientcmdapi.AuthInfo{name: {Token: token}}
	for _, cc := range config.Contexts {
		cc.AuthInfo = name
	}
	b, err := clientcmd.Write(*config)
	require.NoError(t, err)
	return b
}

// waitAuthorized waits until the API server's authorizer, which learns of
// new bindings a moment after they are made, allows the ServiceAccount
// ns/name each verb of rbac.yaml's that clusterRules (cluster-wide) and
// roleRules (in ns) grant, and denies every other; so a row's operator
// starts with exactly its rules.
func waitAuthorized(t *testing.T, admin kubernetes.Interface, ns, name string, f rbacObjects, clusterRules, roleRules []rbacv1.PolicyRule) {
	t.Helper()
	type check struct {
		p         permission
		namespace string
		allowed   bool
	}
	var checks []check
	for _, p := range permissions(f.clusterRole.Rules) {
		checks = append(checks, check{p, "", slices.Contains(permissions(clusterRules), p)})
	}
	for _, p := range permissions(f.role.Rules) {
		checks = append(checks, check{p, ns, slices.Contains(permissions(roleRules), p)})
	}
	user := serviceAccountUser(ns, name)
	var wrong []string
	wait.For(t, patience, func() bool {
		wrong = nil
		for _, c := range checks {
			resource, sub, _ := strings.Cut(c.p.resource, "/")
			sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User:   user,
					Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: c.namespace, Verb: c.p.verb, Group: c.p.group, Resource: resource, Subresource: sub,
					},
				},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			if sar.Status.Allowed != c.allowed {
				wrong = append(wrong, fmt.Sprintf("%s allowed=%t", c.p, sar.Status.Allowed))
			}
		}
		return len(wrong) == 0
	}, "the authorizer never granted "+user+" exactly its rules",
		wait.LastSeen(func() string { return fmt.Sprint(wrong) }))
}

// operatorEnv returns the environment deploy/deployment.yaml gives the
// operator's container, for a pod named pod in ns: its literal values,
// the downward API's POD_NAMESPACE and POD_NAME, PROBE_ADDRESS on a
// free loopback port, since every test's operator runs on this machine,
// and WEBHOOKS off, since the test has no certificate for them.
// It checks that the pod runs as rbac.yaml's ServiceAccount.
func operatorEnv(t *testing.T, f rbacObjects, ns, pod string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(deploymentPath)
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, utilyaml.Unmarshal(b, &d))
	require.Equal(t, f.serviceAccount.Name, d.Spec.Template.Spec.ServiceAccountName, "the operator runs as rbac.yaml's ServiceAccount")
	require.Equal(t, f.serviceAccount.Namespace, d.Namespace, "the operator runs where its ServiceAccount is")
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	env := map[string]string{}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = ns
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = pod
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		default:
			t.Fatalf("%s: the test can't give the operator %s", deploymentPath, e.Name)
		}
	}
	env["PROBE_ADDRESS"] = "127.0.0.1:0"
	// deployment.yaml serves the webhooks, with a certificate mounted from
	// a Secret, which a test has only when it issues one: a test that
	// serves them says WEBHOOKS=on itself, with its certificate's files.
	require.Equal(t, "on", env["WEBHOOKS"], "%s serves the webhooks", deploymentPath)
	env["WEBHOOKS"] = "off"
	return env
}

// shardsOf returns the Memcached controller's number of shards that env,
// operatorEnv's, gives it: CONTROLLER_SHARDS, 0 when unset.
func shardsOf(t *testing.T, env map[string]string) int {
	t.Helper()
	v, ok := env["CONTROLLER_SHARDS"]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s: CONTROLLER_SHARDS", deploymentPath)
	return n
}
