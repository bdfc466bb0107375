package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// memcachedDeploy is the Memcached operator's deploy/, whose clientConfigs
// the command patches.
const memcachedDeploy = "../../memcached/deploy"

// written is what Run wrote to a directory.
type written struct {
	ca     *x509.Certificate
	caPEM  []byte
	secret struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Type       string            `json:"type"`
		Metadata   map[string]string `json:"metadata"`
		Data       map[string][]byte `json:"data"`
	}
	kustomization struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Patches    []struct {
			Target struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"target"`
			Patch string `json:"patch"`
		} `json:"patches"`
	}
}

// read reads what Run wrote to out, each file strictly.
func read(t *testing.T, out string) written {
	t.Helper()
	var w written
	var err error
	w.caPEM, err = os.ReadFile(filepath.Join(out, "ca.crt"))
	require.NoError(t, err)
	block, _ := pem.Decode(w.caPEM)
	require.NotNil(t, block, "ca.crt is PEM")
	w.ca, err = x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(out, "secret.yaml"))
	require.NoError(t, err)
	require.NoError(t, sigsyaml.UnmarshalStrict(b, &w.secret))
	b, err = os.ReadFile(filepath.Join(out, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, sigsyaml.UnmarshalStrict(b, &w.kustomization))
	return w
}

// TestRun_for_the_Memcached_operator writes the kind overlay of
// memcached/deploy and checks each file: a Secret the operator can serve
// with, a certificate the API server verifies for the Service's name with
// the CA, and a patch that adds the CA to each clientConfig that names the
// Service, in the base's objects as they are.
func TestRun_for_the_Memcached_operator(t *testing.T) {
	out := filepath.Join(t.TempDir(), "kind")
	now := time.Date(2026, time.December, 3, 12, 0, 0, 0, time.UTC)
	var stdout bytes.Buffer
	require.NoError(t, Run(Options{
		Base: memcachedDeploy, Out: out, Namespace: "memcached-system", Service: "memcached-webhooks",
		Secret: "memcached-webhooks-tls", Validity: 24 * time.Hour, Now: now,
	}, &stdout))
	require.Equal(t, "wrote "+out+": the Secret memcached-system/memcached-webhooks-tls and 3 caBundle patches over "+memcachedDeploy+
		", for memcached-webhooks.memcached-system.svc until 2026-12-04; apply with kubectl apply -k "+out+"\n", stdout.String())
	w := read(t, out)

	require.True(t, w.ca.IsCA)
	require.Equal(t, "v1", w.secret.APIVersion)
	require.Equal(t, "Secret", w.secret.Kind)
	require.Equal(t, "kubernetes.io/tls", w.secret.Type, "the type cert-manager writes, which deployment.yaml's mount expects")
	require.Equal(t, map[string]string{"name": "memcached-webhooks-tls", "namespace": "memcached-system"}, w.secret.Metadata)
	require.Equal(t, w.caPEM, w.secret.Data["ca.crt"])
	pair, err := tls.X509KeyPair(w.secret.Data["tls.crt"], w.secret.Data["tls.key"])
	require.NoError(t, err, "tls.key is tls.crt's key")
	roots := x509.NewCertPool()
	roots.AddCert(w.ca)
	for _, name := range []string{"memcached-webhooks.memcached-system.svc", "memcached-webhooks.memcached-system.svc.cluster.local"} {
		_, err = pair.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		require.NoError(t, err, "the API server calls the webhooks as %s", name)
	}
	_, err = pair.Leaf.Verify(x509.VerifyOptions{DNSName: "memcached-webhooks.memcached-system.svc", Roots: roots, CurrentTime: now.Add(25 * time.Hour)})
	require.Error(t, err, "the certificate expires after -validity")

	base, err := filepath.Abs(memcachedDeploy)
	require.NoError(t, err)
	require.Len(t, w.kustomization.Resources, 2)
	require.Equal(t, base, filepath.Join(out, w.kustomization.Resources[0]), "the base, relative to -out")
	require.Equal(t, "secret.yaml", w.kustomization.Resources[1])

	objects := baseObjects(t, memcachedDeploy)
	var patched []string
	for _, p := range w.kustomization.Patches {
		obj, ok := objects[p.Target.Kind+" "+p.Target.Name]
		require.True(t, ok, "the patch's target %s %s is in the base", p.Target.Kind, p.Target.Name)
		var ops []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value []byte `json:"value"`
		}
		require.NoError(t, sigsyaml.UnmarshalStrict([]byte(p.Patch), &ops))
		for _, op := range ops {
			require.Equal(t, "add", op.Op)
			require.Equal(t, w.caPEM, op.Value, "the CA, base64-encoded as caBundle is")
			cfg := parent(t, obj, op.Path)
			require.Contains(t, cfg, "service", "%s: a clientConfig", op.Path)
			require.Equal(t, map[string]any{"namespace": "memcached-system", "name": "memcached-webhooks"},
				map[string]any{"namespace": cfg["service"].(map[string]any)["namespace"], "name": cfg["service"].(map[string]any)["name"]})
			patched = append(patched, p.Target.Kind+" "+p.Target.Name+" "+op.Path)
		}
	}
	require.Equal(t, []string{
		"CustomResourceDefinition memcacheds.cache.example.com /spec/conversion/webhook/clientConfig/caBundle",
		"MutatingWebhookConfiguration memcached-operator /webhooks/0/clientConfig/caBundle",
		"ValidatingWebhookConfiguration memcached-operator /webhooks/0/clientConfig/caBundle",
	}, patched, "every clientConfig of the base, which names the Service")
}

// baseObjects returns the objects of the files dir's kustomization lists,
// by kind and name.
func baseObjects(t *testing.T, dir string) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, sigsyaml.Unmarshal(b, &k))
	objects := map[string]map[string]any{}
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(dir, r))
		require.NoError(t, err)
		docs := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var obj map[string]any
			if docs.Decode(&obj) != nil {
				break
			}
			objects[obj["kind"].(string)+" "+obj["metadata"].(map[string]any)["name"].(string)] = obj
		}
	}
	return objects
}

// parent returns the object that the JSON pointer path's last segment
// would be added to in obj, failing the test if there is none: an add
// whose parent is missing fails kustomize's build.
func parent(t *testing.T, obj map[string]any, path string) map[string]any {
	t.Helper()
	segments := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var v any = obj
	for _, s := range segments[:len(segments)-1] {
		switch n := v.(type) {
		case map[string]any:
			v = n[s]
		case []any:
			i, err := strconv.Atoi(s)
			require.NoError(t, err, path)
			require.Less(t, i, len(n), path)
			v = n[i]
		}
		require.NotNil(t, v, "%s: %s is missing", path, s)
	}
	m, ok := v.(map[string]any)
	require.True(t, ok, "%s: the parent is an object", path)
	return m
}

// A base none of whose clientConfigs names the Service fails, and writes
// nothing: a kustomization without patches would deploy webhooks the API
// server can't trust.
func TestRun_fails_for_a_Service_the_base_doesn_t_name(t *testing.T) {
	out := filepath.Join(t.TempDir(), "kind")
	err := Run(Options{Base: memcachedDeploy, Out: out, Namespace: "memcached-system", Service: "other", Secret: "tls", Validity: time.Hour}, &bytes.Buffer{})
	require.EqualError(t, err, "-base: no clientConfig in "+memcachedDeploy+" names the Service memcached-system/other")
	require.NoDirExists(t, out)
}

// An -out inside -base fails, and writes nothing: kustomize refuses the
// cycle.
func TestRun_fails_for_an_out_inside_the_base(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(base, "kustomization.yaml"), []byte("resources: [crd.yaml]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "crd.yaml"), []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  conversion:
    webhook:
      clientConfig:
        service: {namespace: ns, name: hooks, path: /convert}
`), 0o644))
	for _, out := range []string{base, filepath.Join(base, "kind")} {
		err := Run(Options{Base: base, Out: out, Namespace: "ns", Service: "hooks", Secret: "tls", Validity: time.Hour}, &bytes.Buffer{})
		require.EqualError(t, err, "-out "+out+" is inside -base "+base+": kustomize refuses a kustomization inside its base; write it beside")
	}
	require.NoFileExists(t, filepath.Join(base, "secret.yaml"))
	require.NoDirExists(t, filepath.Join(base, "kind"))

	beside := filepath.Join(filepath.Dir(base), filepath.Base(base)+"-kind")
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(beside)) })
	require.NoError(t, Run(Options{Base: base, Out: beside, Namespace: "ns", Service: "hooks", Secret: "tls", Validity: time.Hour}, &bytes.Buffer{}))
	w := read(t, beside)
	require.Equal(t, []string{"../" + filepath.Base(base), "secret.yaml"}, w.kustomization.Resources)
}

func TestOptions_check_names_every_mistake(t *testing.T) {
	err := Options{Namespace: "Memcached", Service: "memcached-webhooks", Secret: "tls", Validity: 0}.check()
	require.EqualError(t, err, "-base: missing\n-out: missing\n"+
		`-namespace "Memcached": [a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]`+"\n"+
		"-validity 0s: want a positive duration")
}
