package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, kubetest.GoleakOptions()...) }

// TestDemo runs the demo end to end, as make demo does, and checks that it
// showed each step and stopped cleanly.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	err := Run(ctx, &out, Options{})
	t.Log(out.String())
	require.NoError(t, err)

	for _, want := range []string{
		"API server ready after",
		"Installing the Memcached CRD, memcacheds.cache.example.com",
		"  sessions  1     1 replicas  yes  1      True       MinimumReplicasAvailable",
		"  pages*    3     2 replicas  yes  2      Unknown    ApplyFailed",
		`fault: injected abort at point "kube:deployments.apps:patch"`,
		"  pages     3     3 replicas  yes  3      True       MinimumReplicasAvailable",
		"  reconcile Memcached  ",
		"error.type=github.com/loam-dev/loam/app/fault.InjectedError",
		"event loam.fit.evaluation loam.fit.point=kube:deployments.apps:patch",
		"Done in ",
	} {
		require.Contains(t, out.String(), want)
	}

	// The backoff: each count of reconciles under the experiment is no
	// smaller than the one before.
	var counts []int
	for line := range strings.Lines(out.String()) {
		if c, ok := strings.CutPrefix(line, "  reconciles of pages since the experiment began: "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			require.NoError(t, err)
			counts = append(counts, n)
		}
	}
	require.Len(t, counts, 3)
	require.True(t, slices.IsSorted(counts), "counts %v", counts)
	require.Positive(t, counts[0], "the experiment's first reconcile failed and was retried")
}

// TestDeployFiles applies every file the kustomization lists, for real, to
// a cluster, as kubectl apply -k would, and checks the admission policy
// keeps the scenario annotation to the chaos harness.
func TestDeployFiles(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	applyDeploy(t, c, "../../databases/deploy")
	applyDeploy(t, c, "../../memcached/deploy")

	// The cluster's admin isn't the chaos harness: the policy denies it the
	// annotation on a Memcached in staging, and allows it elsewhere.
	staging := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "staging"}}}
	_, err = dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Apply(ctx, "staging", staging, metav1.ApplyOptions{FieldManager: "deploy-test"})
	require.NoError(t, err)
	memcacheds := dyn.Resource(memcached.Memcached.GVR())
	annotated := func(ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": memcached.Memcached.Group + "/" + memcached.Memcached.Version,
			"kind":       memcached.Memcached.Kind,
			"metadata":   map[string]any{"name": name, "namespace": ns, "annotations": map[string]any{scenarioAnnotation: "acme.fault={}"}},
			"spec":       map[string]any{"size": int64(1)},
		}}
		return u
	}
	wait.For(t, time.Minute, func() bool {
		_, err := memcacheds.Namespace("staging").Create(ctx, annotated("staging", "cache"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "only the chaos harness sets acme.example.com/failure-scenario")
	}, "the admission policy never denies the annotation in staging")
	_, err = memcacheds.Namespace("default").Create(ctx, annotated("default", "cache"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "outside staging the policy doesn't apply")
}

// applyDeploy applies every file that dir's kustomization lists, in its
// order, to c, as kubectl apply -k would, and checks that the
// kustomization lists every YAML file of dir: each object must be one the
// API server accepts, and a CRD must come to be served.
func applyDeploy(t *testing.T, c *kubetest.Cluster, dir string) {
	t.Helper()
	var kustomization struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		// The image deployment.yaml names, as make image tags it;
		// examples/image's tests check the entries.
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	require.NoError(t, sigsyaml.UnmarshalStrict(b, &kustomization))
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		if name := filepath.Base(f); name != "kustomization.yaml" {
			require.Contains(t, kustomization.Resources, name, "the kustomization of %s lists every file", dir)
		}
	}

	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig())
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))

	for _, name := range kustomization.Resources {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		docs := yaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var u unstructured.Unstructured
			if err := docs.Decode(&u.Object); err != nil {
				require.ErrorIs(t, err, io.EOF, name)
				break
			}
			if len(u.Object) == 0 {
				continue
			}
			gvk := u.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			require.NoError(t, err, "%s: %s", name, gvk)
			var r dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
			if ns := u.GetNamespace(); ns != "" {
				r = dyn.Resource(mapping.Resource).Namespace(ns)
			}
			_, err = r.Apply(ctx, u.GetName(), &u, metav1.ApplyOptions{FieldManager: "deploy-test", Force: true})
			require.NoError(t, err, "%s: %s %s", name, gvk.Kind, u.GetName())
			if gvk.Kind == "CustomResourceDefinition" {
				group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
				kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
				wait.For(t, time.Minute, func() bool {
					mapper.Reset()
					_, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind})
					return err == nil
				}, fmt.Sprintf("the CRD %s is never served", u.GetName()))
			}
		}
		require.NoError(t, f.Close())
	}
}
