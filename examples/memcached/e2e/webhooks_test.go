package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/examples/internal/freeaddr"
	"github.com/loam-dev/loam/examples/memcached"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest"
	"github.com/loam-dev/loam/kubetest/wait"
)

// webhookDefaultImage is the operator's MEMCACHED_DEFAULT_IMAGE in the
// webhooks test: another than v1alpha1's schema default, so an image
// the defaulting webhook set tells from one the schema did.
const webhookDefaultImage = "memcached:1.6.29-alpine"

// The operator, as its main runs it with WEBHOOKS=on, serves the
// conversion between v1alpha1 and v1beta1, the defaulting of the image
// and its validation, called by the API server at a URL on loopback: a
// v1beta1 Memcached is reconciled as the v1alpha1 the Reconciler reads, a
// v1alpha1 one reads back in v1beta1 and a change there reads back in
// v1alpha1, a Memcached of v1beta1 that names no image gets the
// operator's default, and an image the operator doesn't allow is denied
// with the validator's message.
//
// The cluster is the test's own: the webhook configurations are
// cluster-wide, and the CRD's conversion, which stores v1beta1, is this
// operator's alone.
func TestWebhooks_the_operator_converts_defaults_and_validates_Memcacheds(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	ca := apptest.NewCA(t)
	cert := ca.ServerCert("127.0.0.1")
	webhookAddress := freeaddr.Loopback(t)
	client := kube.WebhookClient{URL: "https://" + webhookAddress, CABundle: ca.PEM()}

	// deploy/crd.yaml and deploy/webhooks.yaml, as their golden tests
	// write them, but for the clientConfig: this URL and this CA, in
	// place of the Service and cert-manager's injection.
	hub := memcached.MemcachedV1beta1
	hub.Conversion = &client
	crd, err := hub.CRD()
	require.NoError(t, err)
	validating, mutating, err := kube.WebhookConfigurations("memcached-operator", client,
		memcached.Hooks(memcached.Images{Allowed: []string{"memcached:"}, DefaultImage: webhookDefaultImage})...)
	require.NoError(t, err)
	f := readRBAC(t)
	o, kubeconfig := newOperatorOn(t, c, crd, f, f.clusterRole.Rules, f.role.Rules)
	_, err = o.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = o.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	require.NoError(t, err)
	betas := dyn.Resource(memcached.MemcachedV1beta1.GVR()).Namespace(o.ns)

	h := apptest.NewHost(t, apptest.WithFiles(map[string][]byte{"kubeconfig": kubeconfig, "tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM}))
	o.startAsMainOn(t, f, h, map[string]string{
		"METRICS_ADDRESS":         "127.0.0.1:0",
		"WEBHOOKS":                "on",
		"WEBHOOK_ADDRESS":         webhookAddress,
		"WEBHOOK_CERT_FILE":       h.Path("tls.crt"),
		"WEBHOOK_KEY_FILE":        h.Path("tls.key"),
		"MEMCACHED_DEFAULT_IMAGE": webhookDefaultImage,
	})

	beta := func(name string, replicas int64, image string) *unstructured.Unstructured {
		spec := map[string]any{"replicas": replicas}
		if image != "" {
			spec["image"] = image
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": memcached.MemcachedV1beta1.Group + "/" + memcached.MemcachedV1beta1.Version,
			"kind":       memcached.MemcachedV1beta1.Kind,
			"metadata":   map[string]any{"name": name, "namespace": o.ns},
			"spec":       spec,
		}}
	}
	image := func(u *unstructured.Unstructured) string {
		s, _, err := unstructured.NestedString(u.Object, "spec", "image")
		require.NoError(t, err)
		return s
	}

	// The API server calls a webhook about a second after its
	// configuration is created: a dry run tells when each one does.
	var lastErr error
	wait.For(t, patience, func() bool {
		u, err := betas.Create(ctx, beta("probe", 1, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		lastErr = err
		return err == nil && image(u) == webhookDefaultImage
	}, "the defaulting webhook never set the image", o, wait.LastSeen(func() string { return fmt.Sprint(lastErr) }))

	// An image the schema allows and the operator doesn't: the denial
	// is the validator's message, as kubectl prints it.
	wait.For(t, patience, func() bool {
		_, lastErr = betas.Create(ctx, beta("elsewhere", 1, "registry.example.com/memcached:1.6"), metav1.CreateOptions{})
		return apierrors.IsForbidden(lastErr)
	}, "the validating webhook never denied an image it doesn't allow", o, wait.LastSeen(func() string { return fmt.Sprint(lastErr) }))
	require.ErrorContains(t, lastErr, `admission webhook "validate.v1beta1.memcacheds.cache.example.com" denied the request: `+
		`the image "registry.example.com/memcached:1.6" is not allowed: an image must start with one of memcached:`)

	// A v1beta1 Memcached with no image: stored with the default, and
	// reconciled, through the conversion to v1alpha1, into a Deployment
	// of spec.replicas pods of it.
	created, err := betas.Create(ctx, beta("b", 2, ""), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Equal(t, webhookDefaultImage, image(created))
	var d *appsv1.Deployment
	wait.For(t, patience, func() bool {
		var ok bool
		d, ok = o.deployment(t, "b")
		return ok
	}, "the v1beta1 Memcached's Deployment was never applied", o)
	require.Equal(t, int32(2), *d.Spec.Replicas, "v1beta1's spec.replicas")
	require.Equal(t, webhookDefaultImage, d.Spec.Template.Spec.Containers[0].Image)
	alpha, ok := o.memcached(t, "b")
	require.True(t, ok)
	require.Equal(t, memcached.MemcachedSpec{Size: 2, Image: webhookDefaultImage}, alpha.Spec, "the v1beta1 Memcached read as v1alpha1")

	// A v1alpha1 Memcached, as the demo and the other tests create: its
	// image is v1alpha1's schema default, which the defaulting webhook
	// keeps, and it reads back as v1beta1, and a change there as v1alpha1.
	o.create(t, "a", 3)
	u, err := betas.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	var m memcached.ObjectV1beta1
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &m))
	require.Equal(t, memcached.ReplicasSpec{Replicas: 3, Image: memcached.DefaultImage}, m.Spec, "the v1alpha1 Memcached read as v1beta1")
	// The operator's status write may land between a read and the
	// update, which then conflicts: read it again and retry.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := betas.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, int64(1), "spec", "replicas"); err != nil {
			return err
		}
		_, err = betas.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err)
	alpha, _ = o.memcached(t, "a")
	require.Equal(t, memcached.MemcachedSpec{Size: 1, Image: memcached.DefaultImage}, alpha.Spec, "the v1beta1 change read as v1alpha1")
	wait.For(t, patience, func() bool {
		d, ok := o.deployment(t, "a")
		return ok && *d.Spec.Replicas == 1
	}, "the v1alpha1 Memcached changed in v1beta1 was never reconciled", o)

	require.Equal(t, 0, o.app.Stop(), "SIGTERM: a clean exit; records: %s", o.Report())
	require.Empty(t, o.records("reconcile failed"), o.Report())
	require.Empty(t, o.records("service failed"), o.Report())
}
