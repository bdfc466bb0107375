package kube_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/app"
	"github.com/loam-dev/loam/app/apptest"
	"github.com/loam-dev/loam/kube"
)

// unservedClient returns a Client of an API server nothing serves: building a
// Controller opens no connection.
func unservedClient(t *testing.T) (*app.Setup, *kube.Client) {
	t.Helper()
	s := &app.Setup{Host: app.Host{Network: apptest.NewNetwork()}, Telemetry: apptest.NewTelemetry().Telemetry}
	c, err := kube.NewClient(s, kube.Connection{Server: "api.test:443", TLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	require.NoError(t, err)
	return s, c
}

func validSettings() kube.Settings {
	s := kube.DefaultSettings()
	s.Name = "memcached-controller"
	s.LeaderElection.Namespace = "memcached-system"
	s.LeaderElection.Identity = "memcached-controller-0"
	return s
}

type memcachedReconciler struct{}

func (memcachedReconciler) Reconcile(context.Context, kube.Object[MemcachedSpec, MemcachedStatus]) (kube.Result[MemcachedStatus], error) {
	return kube.Result[MemcachedStatus]{}, nil
}

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

var Namespaces = kube.Kind[corev1.Namespace]{
	GVR:   corev1.SchemeGroupVersion.WithResource("namespaces"),
	Kind:  "Namespace",
	Scope: kube.Cluster,
}

func TestNewController_builds_a_Controller(t *testing.T) {
	s, c := unservedClient(t)
	ctrl, err := kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{},
		kube.Owns(deployments),
		kube.Finalize("cache.example.com/finalizer", func(context.Context, kube.Object[MemcachedSpec, MemcachedStatus]) error { return nil }),
	)
	require.NoError(t, err)
	require.Equal(t, "kube controller memcached-controller (cache.example.com/v1alpha1, Resource=memcacheds)", ctrl.String())
	var _ app.Service = ctrl

	healthy, err := ctrl.Synced().Healthy(t.Context())
	require.NoError(t, err)
	require.False(t, healthy, "unhealthy until the caches sync")
}

func TestNewController_reports_every_mistake_together(t *testing.T) {
	settings := validSettings()
	settings.Name = ""
	settings.Workers = 0
	settings.Namespace = "team-a"
	settings.RetryBaseDelay = time.Second
	settings.RetryMaxDelay = time.Millisecond
	settings.LeaderElection.LeaseDuration = 10 * time.Second
	settings.LeaderElection.RenewDeadline = 10 * time.Second
	settings.LeaderElection.RetryPeriod = 9 * time.Second

	clusterWide := kube.Resource[MemcachedSpec, MemcachedStatus]{Kind: "Memcached", Scope: kube.Cluster}
	var nilReconciler *memcachedReconciler
	_, err := kube.NewController(nil, nil, settings, clusterWide, nilReconciler,
		kube.Part{},
		kube.Owns(schema.GroupVersionResource{Group: "apps"}),
		kube.Owns(deployments),
		kube.Owns(deployments),
		kube.Finalize("cache.example.com/finalizer", func(context.Context, kube.Object[MemcachedSpec, MemcachedStatus]) error { return nil }),
		kube.Finalize("cache.example.com/second", func(context.Context, kube.Object[MemcachedSpec, MemcachedStatus]) error { return nil }),
		kube.Finalize("finalizer", func(context.Context, corev1.Namespace) error { return nil }),
		kube.Finalize[kube.Object[MemcachedSpec, MemcachedStatus]]("cache.example.com/Bad Name!", nil),
	)
	require.Error(t, err)
	for _, want := range []string{
		"kube: Resource Memcached: the Group is missing",
		"kube: Resource Memcached: the Version is missing",
		"kube: Resource Memcached: the Plural is missing",
		"kube: NewController: the Reconciler is nil",
		"kube: the Setup is nil",
		"kube: the Client is nil",
		"kube: Settings.Name: is empty",
		"kube: Settings.Workers: is 0",
		"kube: Settings.RetryMaxDelay: 1ms is shorter than RetryBaseDelay, 1s",
		"kube: Settings.LeaderElection.LeaseDuration: 10s is not longer than RenewDeadline, 10s",
		"kube: Settings.LeaderElection.RenewDeadline: 10s is not longer than 1.2 RetryPeriods",
		`kube: Settings.Namespace: is "team-a", but Memcached is cluster-scoped`,
		"kube: Part 0, Part{}: the zero Part",
		"kube: Part 1, Owns(apps/, Resource=): the GVR has no Version",
		"kube: Part 1, Owns(apps/, Resource=): the GVR has no Resource",
		"kube: Part 3, Owns(apps/v1, Resource=deployments): apps/v1, Resource=deployments is owned twice",
		"kube: Part 5, Finalize(\"cache.example.com/second\"",
		"a second",
		`kube: Part 6, Finalize("finalizer", func(context.Context, v1.Namespace) error): the finalizer "finalizer" has no domain`,
		"the function takes a v1.Namespace, and the Controller's objects are kube.Object[",
		`the finalizer "cache.example.com/Bad Name!" is not a qualified name`,
		"the function is nil",
	} {
		require.ErrorContains(t, err, want)
	}
}

func TestNewController_reports_a_bad_Scope(t *testing.T) {
	s, c := unservedClient(t)
	r := Memcached
	r.Scope = "Everywhere"
	_, err := kube.NewController(s, c, validSettings(), r, memcachedReconciler{})
	require.ErrorContains(t, err, `kube: Resource Memcached: the Scope "Everywhere" is neither Namespaced nor Cluster`)
}

type defaultDeny struct{}

func (defaultDeny) Reconcile(context.Context, corev1.Namespace) (time.Duration, error) { return 0, nil }

func TestNewKindController_builds_a_Controller(t *testing.T) {
	s, c := unservedClient(t)
	ctrl, err := kube.NewKindController(s, c, validSettings(), Namespaces, defaultDeny{},
		kube.Owns(schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}),
		kube.Finalize("example.com/finalizer", func(context.Context, corev1.Namespace) error { return nil }),
	)
	require.NoError(t, err)
	require.Equal(t, "kube controller memcached-controller (/v1, Resource=namespaces)", ctrl.String())
}

// notAnObject has no metadata.
type notAnObject struct{ Name string }

func TestNewKindController_reports_every_mistake_together(t *testing.T) {
	settings := validSettings()
	settings.Namespace = "team-a"
	settings.LeaderElection.Identity = ""
	k := kube.Kind[notAnObject]{Scope: kube.Cluster}
	_, err := kube.NewKindController(nil, nil, settings, k, nil,
		kube.Finalize("example.com/finalizer", func(context.Context, corev1.Namespace) error { return nil }),
	)
	require.Error(t, err)
	for _, want := range []string{
		"kube: Kind kube.Kind[",
		"the GVR has no Version",
		"the GVR has no Resource",
		"the Kind is missing",
		"is no metav1.Object",
		"kube: NewKindController: the KindReconciler is nil",
		"kube: the Setup is nil",
		"kube: the Client is nil",
		"kube: Settings.LeaderElection.Identity: is empty",
		`kube: Settings.Namespace: is "team-a"`,
		"the function takes a v1.Namespace, and the Controller's objects are kube_test.notAnObject",
	} {
		require.ErrorContains(t, err, want)
	}
}

func TestNewKindController_takes_a_KindReconcilerFunc(t *testing.T) {
	s, c := unservedClient(t)
	_, err := kube.NewKindController(s, c, validSettings(), Namespaces, kube.KindReconcilerFunc[corev1.Namespace](func(context.Context, corev1.Namespace) (time.Duration, error) {
		return 0, nil
	}))
	require.NoError(t, err)
	var nilFunc kube.KindReconcilerFunc[corev1.Namespace]
	_, err = kube.NewKindController(s, c, validSettings(), Namespaces, nilFunc)
	require.ErrorContains(t, err, "the KindReconciler is nil")
}

func TestController_Shutdown_before_Serve_returns_at_once_and_Serve_then_returns_nil(t *testing.T) {
	s, c := unservedClient(t)
	ctrl, err := kube.NewController(s, c, validSettings(), Memcached, memcachedReconciler{})
	require.NoError(t, err)
	require.NoError(t, ctrl.Shutdown(t.Context()))
	require.NoError(t, ctrl.Serve(t.Context()), "asked to stop before it started, Serve lists nothing")
}
