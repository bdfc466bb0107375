package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/loam-dev/loam/adapters/informer"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/fault"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// TestFaults_a_FaultSwitch_fails_closed_when_RBAC_is_revoked: an App
// whose ServiceAccount loses the RoleBinding that let it read the switch,
// while the switch says on, turns failure injection off within
// informer.ConfigMapStale (30 s, and the second RBAC takes to apply),
// with the record saying why, though the ConfigMap still says on.
func TestFaults_a_FaultSwitch_fails_closed_when_RBAC_is_revoked(t *testing.T) {
	// Serial: its bound, ConfigMapStale + 5s, is tight under CPU contention.
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	admin := adminClients(t, c)
	settings := switchOnFor(t, admin, ns, "switched")

	token, err := c.ServiceAccountToken(t.Context(), ns, "switched")
	require.NoError(t, err)
	conn := c.Connection()
	conn.Token = func(context.Context) (string, error) { return token, nil }
	var faults *fault.Injector
	a := startExperimentWith(t, conn, fault.Settings{Decoder: scenarioCodec(t)}, func(s *app.Setup, client *kube.Client) ([]app.Service, error) {
		faults = s.Faults
		sw, err := kube.NewFaultSwitch(s, client, settings)
		return []app.Service{sw}, err
	})
	wait.For(t, time.Minute, func() bool { _, ok := switchedAt(a, fault.SwitchOnBody); return ok }, "the App never reads on", wait.App(a))
	require.True(t, faults.On())

	revoked := time.Now()
	require.NoError(t, admin.kube.RbacV1().RoleBindings(ns).Delete(t.Context(), "failure-injection-switch", metav1.DeleteOptions{}))
	bound := informer.ConfigMapStale + 5*time.Second
	wait.For(t, bound+10*time.Second, func() bool { return !faults.On() }, "failure injection stays on without RBAC", wait.App(a))
	at, ok := switchedAt(a, fault.SwitchUnreadBody)
	require.True(t, ok, "the record says the switch can't be read")
	require.LessOrEqual(t, at.Sub(revoked), bound)
	t.Logf("figure: | RoleBinding deleted to failure injection off | %s |", at.Sub(revoked))
	require.Equal(t, 0, a.Stop())
}
