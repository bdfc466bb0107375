package webhookcel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kube/webhookcel"
)

func validatePod(context.Context, kube.Admission[corev1.Pod]) ([]string, error) { return nil, nil }

func TestMatchConditions_are_compiled_and_written_by_WebhookConfigurations(t *testing.T) {
	pods := kube.Kind[corev1.Pod]{GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Scope: kube.Namespaced}
	client := kube.WebhookClient{URL: "https://127.0.0.1:9443/hooks"}
	for _, c := range []struct {
		name, expression, err string
	}{
		{name: "a bool", expression: "request.userInfo.username != 'system:serviceaccount:x:y'"},
		{name: "not a bool", expression: "object.metadata.name", err: "condition 0 (c): must evaluate to bool but got dyn"},
		{name: "a misspelled field", expression: "request.usrInfo.username == 'a'", err: "compilation failed"},
		{name: "a library too new for the compatibility version", expression: "[1].includes(1)", err: "compilation failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt := webhookcel.MatchConditions(kube.MatchCondition{Name: "c", Expression: c.expression})
			require.Equal(t, `MatchConditions(["c"])`, opt.String())
			v, _, err := kube.WebhookConfigurations("x", client, kube.ValidateKind(pods, validatePod, opt))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				require.ErrorContains(t, err, `kube: Hook 0, ValidateKind(pods.v1.core): option 0, MatchConditions(["c"])`)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []admissionregistrationv1.MatchCondition{{Name: "c", Expression: c.expression}}, v.Webhooks[0].MatchConditions)
		})
	}
}
