package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/loam-dev/loam/adapters/webhook"
	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/wait"
)

// widgetSpec is a Widget's spec in v1beta1, the version the API server
// stores; widgetAlphaSpec is v1alpha1's, which names Replicas Size.
type (
	widgetSpec struct {
		Replicas int32  `json:"replicas"`
		Color    string `json:"color,omitempty"`
	}
	widgetAlphaSpec struct {
		Size  int32  `json:"size"`
		Color string `json:"color,omitempty"`
	}
	widgetStatus struct {
		// Seen is the size a Controller of v1alpha1 saw.
		Seen int32 `json:"seen,omitempty"`
	}
	widgetObject      = kube.Object[widgetSpec, widgetStatus]
	widgetAlphaObject = kube.Object[widgetAlphaSpec, widgetStatus]
)

// webhooksGroup is the API group of a test's custom resources.
func webhooksGroup(ns string) string { return ns + ".webhooks.e2e.loam.dev" }

// widgetsAlpha is the v1alpha1 Widget in group.
func widgetsAlpha(group string) kube.Resource[widgetAlphaSpec, widgetStatus] {
	return kube.Resource[widgetAlphaSpec, widgetStatus]{
		Group: group, Version: "v1alpha1", Kind: "Widget", Plural: "widgets", Scope: kube.Namespaced,
	}
}

// widgets is the Widget in group: v1beta1, the hub, and v1alpha1, a Spoke
// converted through the webhook conversion serves.
func widgets(group string, conversion kube.WebhookClient) kube.Resource[widgetSpec, widgetStatus] {
	up := func(from widgetAlphaObject, to *widgetObject) error {
		to.Spec = widgetSpec{Replicas: from.Spec.Size, Color: from.Spec.Color}
		to.Status = from.Status
		return nil
	}
	down := func(from widgetObject, to *widgetAlphaObject) error {
		to.Spec = widgetAlphaSpec{Size: from.Spec.Replicas, Color: from.Spec.Color}
		to.Status = from.Status
		return nil
	}
	return kube.Resource[widgetSpec, widgetStatus]{
		Group: group, Version: "v1beta1", Kind: "Widget", Plural: "widgets", Scope: kube.Namespaced,
		Versions:   []kube.Version{kube.Spoke(widgetsAlpha(group), up, down)},
		Conversion: &conversion,
	}
}

// gadgets is a custom resource of one version in group, which admission
// webhooks admit.
func gadgets(group string) kube.Resource[widgetAlphaSpec, widgetStatus] {
	return kube.Resource[widgetAlphaSpec, widgetStatus]{
		Group: group, Version: "v1", Kind: "Gadget", Plural: "gadgets", Scope: kube.Namespaced,
	}
}

// webhookSecrets is Kubernetes' Secrets, which a Hook of a Kind admits.
var webhookSecrets = kube.Kind[corev1.Secret]{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Kind: "Secret", Scope: kube.Namespaced}

// decodeAs decodes u, an object the dynamic client returned, into T.
func decodeAs[T any](t *testing.T, u *unstructured.Unstructured) T {
	t.Helper()
	raw, err := u.MarshalJSON()
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

func TestWebhooks_a_Conversion_converts_objects_between_their_versions_both_ways(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	group := webhooksGroup(ns)
	w := openWebhooks(t)
	hub := widgets(group, w.client)
	w.build(t, kube.Conversion(hub))
	w.serve(t)
	crd, err := hub.CRD()
	require.NoError(t, err)
	installCRD(t, c, crd)
	dyn := adminClients(t, c).dynamic
	alpha := dyn.Resource(widgetsAlpha(group).GVR()).Namespace(ns)
	beta := dyn.Resource(hub.GVR()).Namespace(ns)

	t.Run("an object created in v1alpha1 reads in v1beta1 with its size as replicas", func(t *testing.T) {
		_, err := alpha.Create(t.Context(), unstructuredOf(t, widgetAlphaObject{
			TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1alpha1", Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{Name: "from-alpha"},
			Spec:       widgetAlphaSpec{Size: 3, Color: "red"},
		}), metav1.CreateOptions{})
		require.NoError(t, err)
		got, err := beta.Get(t.Context(), "from-alpha", metav1.GetOptions{})
		require.NoError(t, err)
		obj := decodeAs[widgetObject](t, got)
		require.Equal(t, group+"/v1beta1", obj.APIVersion)
		require.Equal(t, widgetSpec{Replicas: 3, Color: "red"}, obj.Spec)
	})
	t.Run("an object created in v1beta1 reads in v1alpha1 with its replicas as size", func(t *testing.T) {
		_, err := beta.Create(t.Context(), unstructuredOf(t, widgetObject{
			TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1beta1", Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{Name: "from-beta"},
			Spec:       widgetSpec{Replicas: 5, Color: "green"},
		}), metav1.CreateOptions{})
		require.NoError(t, err)
		got, err := alpha.Get(t.Context(), "from-beta", metav1.GetOptions{})
		require.NoError(t, err)
		obj := decodeAs[widgetAlphaObject](t, got)
		require.Equal(t, group+"/v1alpha1", obj.APIVersion)
		require.Equal(t, widgetAlphaSpec{Size: 5, Color: "green"}, obj.Spec)
	})
	require.NotEmpty(t, w.tel.SpansNamed("convert Widget"), "each conversion review is a span")
}

// The Controller's App starts before the Webhooks serve, as an operator's
// Services start together: it waits, says so, and once the conversion
// serves it reconciles an object stored in v1beta1 as v1alpha1 has it.
func TestWebhooks_a_Controller_of_a_spoke_awaits_the_Conversion_and_sees_the_stored_object_converted(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	group := webhooksGroup(ns)
	w := openWebhooks(t)
	hub := widgets(group, w.client)
	w.build(t, kube.Conversion(hub))
	crd, err := hub.CRD()
	require.NoError(t, err)
	installCRD(t, c, crd)
	dyn := adminClients(t, c).dynamic
	beta := dyn.Resource(hub.GVR()).Namespace(ns)
	// v1beta1 is the stored version: its create converts nothing, so it
	// needs no webhook yet.
	_, err = beta.Create(t.Context(), unstructuredOf(t, widgetObject{
		TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1beta1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "stored"},
		Spec:       widgetSpec{Replicas: 4},
	}), metav1.CreateOptions{})
	require.NoError(t, err)

	var saw atomic.Int32
	reconciler := kube.ReconcilerFunc[widgetAlphaSpec, widgetStatus](func(_ context.Context, obj widgetAlphaObject) (kube.Result[widgetStatus], error) {
		saw.Store(obj.Spec.Size)
		st := obj.Status
		st.Seen = obj.Spec.Size
		return kube.Result[widgetStatus]{Status: &st}, nil
	})
	a := startController(t, c.Connection(), func(s *app.Setup, client *kube.Client) (*kube.Controller, error) {
		settings := settingsFor("widget-controller", ns, "pod-a")
		settings.Namespace = ns
		return kube.NewController(s, client, settings, widgetsAlpha(group), reconciler, kube.AwaitWebhooks(w.Webhooks))
	})
	wait.For(t, 30*time.Second, func() bool {
		return slices.ContainsFunc(recordsOf(a.Telemetry(), "waiting for the webhooks to serve"), func(r logRecord) bool {
			return r.severity == "INFO" && r.attrs["loam.kube.controller.name"] == "widget-controller"
		})
	}, "the Controller never said it waits for the webhooks", a)

	w.serve(t)
	wait.For(t, time.Minute, func() bool {
		got, err := beta.Get(t.Context(), "stored", metav1.GetOptions{})
		require.NoError(t, err)
		return decodeAs[widgetObject](t, got).Status.Seen == 4
	}, "the Controller of v1alpha1 never wrote the size it saw", a)
	require.EqualValues(t, 4, saw.Load(), "the Reconciler saw v1beta1's replicas as v1alpha1's size")
	require.Equal(t, 0, a.Stop(), "the App stops before its webhooks do")
	require.Empty(t, a.failure())
}

func TestWebhooks_a_denial_reaches_the_client_with_its_message_and_warnings(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	other := c.Namespace(t)
	group := webhooksGroup(ns)
	r := gadgets(group)
	crd, err := r.CRD()
	require.NoError(t, err)
	installCRD(t, c, crd)

	validate := kube.Validate(r, func(_ context.Context, a kube.Admission[widgetAlphaObject]) ([]string, error) {
		switch size := a.Object.Spec.Size; {
		case size > 3:
			return []string{fmt.Sprintf("spec.size %d is more than a gadget takes", size), "gadgets are experimental"},
				fmt.Errorf("%s/%s: spec.size %d is above 3", a.Namespace, a.Name, size)
		case size == 3:
			return []string{"spec.size 3 is the most a gadget takes"}, nil
		}
		return nil, nil
	}, scopedTo(ns), kube.TimeoutSeconds(5))
	w := openWebhooks(t)
	w.build(t, validate)
	w.serve(t)
	register(t, c, ns+"-deny", w.client, validate)

	admin := warningClients(t, c)
	gadget := func(ns, name string, size int32) *unstructured.Unstructured {
		return unstructuredOf(t, widgetAlphaObject{
			TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1", Kind: "Gadget"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       widgetAlphaSpec{Size: size},
		})
	}
	gadgetsIn := func(ns string) dynamic.ResourceInterface { return admin.dynamic.Resource(r.GVR()).Namespace(ns) }
	var last error
	wait.For(t, 30*time.Second, func() bool {
		_, last = gadgetsIn(ns).Create(t.Context(), gadget(ns, "probe", 5), dryRun)
		return last != nil && strings.Contains(last.Error(), "denied the request")
	}, "the API server never called the validating webhook", wait.LastSeen(func() string { return fmt.Sprint(last) }))
	admin.warned.take()

	t.Run("a create the function denies fails with its message and its warnings", func(t *testing.T) {
		_, err := gadgetsIn(ns).Create(t.Context(), gadget(ns, "big", 5), metav1.CreateOptions{})
		require.Error(t, err)
		require.True(t, apierrors.IsForbidden(err), "denied with 403 Forbidden: %v", err)
		want := fmt.Sprintf("%s/big: spec.size 5 is above 3", ns)
		require.ErrorContains(t, err, fmt.Sprintf(`admission webhook "validate.v1.gadgets.%s" denied the request: %s`, group, want))
		require.Equal(t, []string{"spec.size 5 is more than a gadget takes", "gadgets are experimental"}, admin.warned.take())

		var denials []logRecord
		for _, rec := range recordsOf(w.tel, "admission denied") {
			if rec.attrs[webhook.ObjectNameKey] == "big" {
				denials = append(denials, rec)
			}
		}
		require.Len(t, denials, 1, "one record of the denial")
		require.Equal(t, "WARN", denials[0].severity)
		require.Equal(t, want, denials[0].attrs["exception.message"])
		require.Equal(t, ns, denials[0].attrs[webhook.NamespaceKey])
		require.Equal(t, "Gadget", denials[0].attrs[webhook.ObjectKindKey])
		require.Equal(t, "CREATE", denials[0].attrs[webhook.OperationKey])
	})
	t.Run("a create it allows succeeds with its warning", func(t *testing.T) {
		_, err := gadgetsIn(ns).Create(t.Context(), gadget(ns, "most", 3), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, []string{"spec.size 3 is the most a gadget takes"}, admin.warned.take())
	})
	t.Run("a create in another namespace is none of its business", func(t *testing.T) {
		// The webhook would deny it, and warn: it was never asked.
		_, err := gadgetsIn(other).Create(t.Context(), gadget(other, "big", 5), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Empty(t, admin.warned.take())
	})
}

func TestWebhooks_Mutate_and_MutateKind_default_what_a_created_object_lacks(t *testing.T) {
	t.Parallel()
	const defaulted = "e2e.loam.dev/defaulted"
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	group := webhooksGroup(ns)
	r := gadgets(group)
	crd, err := r.CRD()
	require.NoError(t, err)
	installCRD(t, c, crd)

	mutateGadget := kube.Mutate(r, func(_ context.Context, _ kube.Admission[widgetAlphaObject], obj *widgetAlphaObject) ([]string, error) {
		if obj.Spec.Color == "" {
			obj.Spec.Color = "blue"
		}
		if obj.Labels == nil {
			obj.Labels = map[string]string{}
		}
		obj.Labels[defaulted] = "gadget"
		return nil, nil
	}, scopedTo(ns))
	mutateConfigMap := kube.MutateKind(configMaps, func(_ context.Context, _ kube.Admission[corev1.ConfigMap], cm *corev1.ConfigMap) ([]string, error) {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		if _, ok := cm.Data["mode"]; !ok {
			cm.Data["mode"] = "safe"
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[defaulted] = "configmap"
		return nil, nil
	}, scopedTo(ns))
	w := openWebhooks(t)
	w.build(t, mutateGadget, mutateConfigMap)
	w.serve(t)
	register(t, c, ns+"-defaults", w.client, mutateGadget, mutateConfigMap)

	admin := adminClients(t, c)
	gadgetsIn := admin.dynamic.Resource(r.GVR()).Namespace(ns)
	configMapsIn := admin.kube.CoreV1().ConfigMaps(ns)
	gadget := func(name, color string) *unstructured.Unstructured {
		return unstructuredOf(t, widgetAlphaObject{
			TypeMeta:   metav1.TypeMeta{APIVersion: group + "/v1", Kind: "Gadget"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       widgetAlphaSpec{Size: 1, Color: color},
		})
	}
	configMap := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
	}
	wait.For(t, 30*time.Second, func() bool {
		g, err := gadgetsIn.Create(t.Context(), gadget("probe", ""), dryRun)
		require.NoError(t, err)
		cm, err := configMapsIn.Create(t.Context(), configMap("probe", nil), dryRun)
		require.NoError(t, err)
		return g.GetLabels()[defaulted] != "" && cm.Labels[defaulted] != ""
	}, "the API server never called both mutating webhooks")

	t.Run("a Resource's object comes back, and is stored, with its defaults", func(t *testing.T) {
		created, err := gadgetsIn.Create(t.Context(), gadget("plain", ""), metav1.CreateOptions{})
		require.NoError(t, err)
		stored, err := gadgetsIn.Get(t.Context(), "plain", metav1.GetOptions{})
		require.NoError(t, err)
		for _, u := range []*unstructured.Unstructured{created, stored} {
			obj := decodeAs[widgetAlphaObject](t, u)
			require.Equal(t, widgetAlphaSpec{Size: 1, Color: "blue"}, obj.Spec)
			require.Equal(t, map[string]string{defaulted: "gadget"}, obj.Labels)
		}
		created, err = gadgetsIn.Create(t.Context(), gadget("red", "red"), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, widgetAlphaSpec{Size: 1, Color: "red"}, decodeAs[widgetAlphaObject](t, created).Spec, "what is set stays")
	})
	t.Run("a Kind's object comes back, and is stored, with its defaults", func(t *testing.T) {
		created, err := configMapsIn.Create(t.Context(), configMap("plain", map[string]string{"k": "v"}), metav1.CreateOptions{})
		require.NoError(t, err)
		stored, err := configMapsIn.Get(t.Context(), "plain", metav1.GetOptions{})
		require.NoError(t, err)
		for _, cm := range []*corev1.ConfigMap{created, stored} {
			require.Equal(t, map[string]string{"k": "v", "mode": "safe"}, cm.Data)
			require.Equal(t, map[string]string{defaulted: "configmap"}, cm.Labels)
		}
		created, err = configMapsIn.Create(t.Context(), configMap("fast", map[string]string{"mode": "fast"}), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"mode": "fast"}, created.Data, "what is set stays")
	})
	require.NotEmpty(t, w.tel.SpansNamed("mutate Gadget"))
	require.NotEmpty(t, w.tel.SpansNamed("mutate ConfigMap"))
}

// Both webhooks are in one configuration, which the API server takes
// whole: once the failing one fails, the ignored one is called too.
func TestWebhooks_a_webhook_that_is_down_fails_or_is_ignored_as_its_failurePolicy_says(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	w := openWebhooks(t)
	addr := w.ln.Addr().String()
	require.NoError(t, w.ln.Close(), "nothing listens: the webhooks are down")

	allowConfigMap := func(context.Context, kube.Admission[corev1.ConfigMap]) ([]string, error) { return nil, nil }
	allowSecret := func(context.Context, kube.Admission[corev1.Secret]) ([]string, error) { return nil, nil }
	register(t, c, ns+"-down", w.client,
		kube.ValidateKind(configMaps, allowConfigMap, kube.FailurePolicy(kube.Fail), kube.TimeoutSeconds(2), scopedTo(ns)),
		kube.ValidateKind(webhookSecrets, allowSecret, kube.FailurePolicy(kube.Ignore), kube.TimeoutSeconds(2), scopedTo(ns)),
	)
	k := adminClients(t, c).kube
	var last error
	wait.For(t, 30*time.Second, func() bool {
		_, last = k.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		return last != nil && strings.Contains(last.Error(), "failed calling webhook")
	}, "the API server never called the failing webhook", wait.LastSeen(func() string { return fmt.Sprint(last) }))

	t.Run("Fail refuses the create, naming the webhook and the failed call", func(t *testing.T) {
		_, err := k.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "refused"}}, metav1.CreateOptions{})
		require.Error(t, err)
		require.True(t, apierrors.IsInternalError(err), "%v", err)
		require.ErrorContains(t, err, `failed calling webhook "validate.v1.configmaps.core"`)
		require.ErrorContains(t, err, "https://"+addr+"/validate/core/v1/configmaps")
	})
	t.Run("Ignore lets the create through", func(t *testing.T) {
		_, err := k.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "let-through"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	})
}

// The API server keeps its connections to a webhook, so a new handshake
// of its own needs a client of its own: a configuration whose CA bundle
// is other bytes, after the rotation, gets one.
func TestWebhooks_a_rotated_certificate_serves_new_connections_without_a_restart(t *testing.T) {
	t.Parallel()
	c := cluster.Cluster(t)
	ns := c.Namespace(t)
	denyConfigMap := kube.ValidateKind(configMaps, func(_ context.Context, a kube.Admission[corev1.ConfigMap]) ([]string, error) {
		return nil, fmt.Errorf("no ConfigMap in %s", a.Namespace)
	}, scopedTo(ns))
	denySecret := kube.ValidateKind(webhookSecrets, func(_ context.Context, a kube.Admission[corev1.Secret]) ([]string, error) {
		return nil, fmt.Errorf("no Secret in %s", a.Namespace)
	}, scopedTo(ns))
	w := openWebhooks(t)
	w.build(t, denyConfigMap, denySecret)
	w.serve(t)
	register(t, c, ns+"-before", w.client, denyConfigMap)
	k := adminClients(t, c).kube
	denial := fmt.Sprintf(`admission webhook "validate.v1.configmaps.core" denied the request: no ConfigMap in %s`, ns)
	var last error
	configMapDenied := func() bool {
		_, last = k.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		return last != nil && strings.Contains(last.Error(), denial)
	}
	wait.For(t, 30*time.Second, configMapDenied, "the API server never called the webhook", wait.LastSeen(func() string { return fmt.Sprint(last) }))

	a := w.cert
	require.Zero(t, a.Leaf.SerialNumber.Cmp(w.servedSerial(t)), "the first certificate is served")
	b := w.ca.ServerCert("127.0.0.1")
	require.NotZero(t, a.Leaf.SerialNumber.Cmp(b.Leaf.SerialNumber))
	w.rotate(t, b)
	wait.For(t, 30*time.Second, func() bool { return w.servedSerial(t).Cmp(b.Leaf.SerialNumber) == 0 },
		"a new connection is never served the rotated certificate")
	loaded := false
	for _, rec := range recordsOf(w.tel, "TLS certificate loaded") {
		loaded = loaded || rec.attrs["loam.tls.serial"] == b.Leaf.SerialNumber.String()
	}
	require.True(t, loaded, "an INFO record names the rotated certificate's serial")

	require.True(t, configMapDenied(), "a denial still denies: %v", last)

	after := w.client
	after.CABundle = append(w.ca.PEM(), '\n')
	register(t, c, ns+"-after", after, denySecret)
	wait.For(t, 30*time.Second, func() bool {
		_, err := k.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dryRun)
		if err == nil {
			return false
		}
		require.ErrorContains(t, err, fmt.Sprintf(`admission webhook "validate.v1.secrets.core" denied the request: no Secret in %s`, ns),
			"a call on a new connection is answered, not failed")
		return true
	}, "the API server never called the webhook through a client of the new configuration")
}
