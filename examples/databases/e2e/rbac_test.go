package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// deployRBAC returns the ClusterRole and the leader election's Role of
// deploy/rbac.yaml.
func deployRBAC(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	b, err := os.ReadFile("../deploy/rbac.yaml")
	require.NoError(t, err)
	var (
		cr   *rbacv1.ClusterRole
		role *rbacv1.Role
	)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var j json.RawMessage
		if err := dec.Decode(&j); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		var doc struct {
			Kind string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(j, &doc))
		switch doc.Kind {
		case "ClusterRole":
			cr = &rbacv1.ClusterRole{}
			require.NoError(t, json.Unmarshal(j, cr))
		case "Role":
			role = &rbacv1.Role{}
			require.NoError(t, json.Unmarshal(j, role))
		}
	}
	require.NotNil(t, cr, "deploy/rbac.yaml has a ClusterRole")
	require.NotNil(t, role, "deploy/rbac.yaml has a Role")
	return cr, role
}

// asServiceAccount returns a kubeconfig of the ServiceAccount
// databases-controller in ns, bound to exactly deploy/rbac.yaml's rules:
// its ClusterRole through a RoleBinding in ns, as a controller limited
// to ns with WATCH_NAMESPACE is bound, and its leader election's Role.
func asServiceAccount(t *testing.T) func(c *kubetest.Cluster, ns string) []byte {
	return func(c *kubetest.Cluster, ns string) []byte {
		t.Helper()
		ctx := t.Context()
		cr, role := deployRBAC(t)
		kc, err := kubernetes.NewForConfig(c.RESTConfig())
		require.NoError(t, err)
		// The ClusterRole is cluster-wide: each test's has a name of its own.
		cr.Name = ns + "-databases-controller"
		_, err = kc.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = kc.RbacV1().ClusterRoles().Delete(t.Context(), cr.Name, metav1.DeleteOptions{})
		})
		role.Namespace = ns
		_, err = kc.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
		require.NoError(t, err)
		subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "databases-controller", Namespace: ns}}
		for _, b := range []*rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Name: "databases-controller"}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name}},
			{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Subjects: subjects,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}},
		} {
			_, err = kc.RbacV1().RoleBindings(ns).Create(ctx, b, metav1.CreateOptions{})
			require.NoError(t, err)
		}

		token, err := c.ServiceAccountToken(ctx, ns, "databases-controller")
		require.NoError(t, err)
		config, err := clientcmd.Load(c.Kubeconfig())
		require.NoError(t, err)
		config.AuthInfos = map[string]*clientcmdapi.AuthInfo{"databases-controller": {Token: token}}
		for _, cc := range config.Contexts {
			cc.AuthInfo = "databases-controller"
		}
		b, err := clientcmd.Write(*config)
		require.NoError(t, err)
		return b
	}
}

func TestRBAC_the_controller_provisions_and_finalizes_with_exactly_deploy_s_rules(t *testing.T) {
	r := startAs(t, asServiceAccount(t), nil)
	database := r.create(t, "orders", nil)

	wait.For(t, patience, func() bool {
		d, _ := r.get(t, "orders")
		c := ready(d)
		return c != nil && c.Status == metav1.ConditionTrue
	}, "the Database never became Ready", r)
	require.NoError(t, r.databases.Delete(t.Context(), "orders", metav1.DeleteOptions{}))
	wait.For(t, patience, func() bool {
		_, ok := r.get(t, "orders")
		return !ok
	}, "the finalizer never let the Database go", r)
	require.False(t, exists(t, database))
}
