package jsonpatch_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/domain/jsonpatch"
)

// deployment returns a Deployment of a few KB as the API server sends it,
// with progressDeadlineSeconds set only when defaulted is true: the one
// field an end user's defaulting adds.
func deployment(defaulted bool) []byte {
	var env strings.Builder
	for i := range 20 {
		if i > 0 {
			env.WriteString(",")
		}
		fmt.Fprintf(&env, `{"name":"VAR_%d","value":"value-%d"}`, i, i)
	}
	var labels strings.Builder
	for i := range 10 {
		if i > 0 {
			labels.WriteString(",")
		}
		fmt.Fprintf(&labels, `"example.com/label-%d":"value-%d"`, i, i)
	}
	deadline := ""
	if defaulted {
		deadline = `"progressDeadlineSeconds":600,`
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":"apps/v1","kind":"Deployment",`+
		`"metadata":{"name":"web","namespace":"default","uid":"0c6f7c8e-4b1d-4f1a-9d55-2f3c1a7e9b10","resourceVersion":"12345","generation":3,`+
		`"labels":{%[1]s},"annotations":{"deployment.kubernetes.io/revision":"3","kubectl.kubernetes.io/last-applied-configuration":"{}"}},`+
		`"spec":{%[2]s"replicas":3,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":"web"}},`+
		`"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%%","maxUnavailable":"25%%"}},`+
		`"template":{"metadata":{"labels":{%[1]s}},"spec":{"containers":[`+
		`{"name":"web","image":"registry.example.com/web:1.2.3","ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],`+
		`"env":[%[3]s],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},`+
		`"readinessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"periodSeconds":10,"timeoutSeconds":1},`+
		`"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"},`+
		`{"name":"sidecar","image":"registry.example.com/sidecar:4.5.6","args":["--port=9090","--verbose"],"env":[%[3]s]}],`+
		`"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","schedulerName":"default-scheduler",`+
		`"securityContext":{"runAsNonRoot":true,"runAsUser":1000}}}},`+
		`"status":{"observedGeneration":3,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,`+
		`"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable"},`+
		`{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}`,
		labels.String(), deadline, env.String())
	return b.Bytes()
}

func BenchmarkDiff(b *testing.B) {
	before, after := deployment(false), deployment(true)
	patch, err := jsonpatch.Diff(before, after)
	require.NoError(b, err)
	require.JSONEq(b, `[{"op":"add","path":"/spec/progressDeadlineSeconds","value":600}]`, string(patch))
	b.SetBytes(int64(len(before) + len(after)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonpatch.Diff(before, after); err != nil {
			b.Fatal(err)
		}
	}
}
