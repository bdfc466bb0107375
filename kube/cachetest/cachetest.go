// Package cachetest fills a kube.Cache with objects of the test's own,
// for a Reconciler's unit test: no API server, no Controller, no
// goroutine. The Reconciler reads the Cache it always reads, through the
// code a Controller's cache runs, so a read answers as the watched cache
// would have: an object outside the Cache's namespaces, or outside its
// selectors, isn't there; a namespace outside them is an error; a missing
// object is found false; each read returns a new copy.
//
//	var configMaps = kube.NewCache(kube.Kind[corev1.ConfigMap]{...}, kube.CacheOptions[corev1.ConfigMap]{})
//
//	func TestReconcile_reads_the_ConfigMap(t *testing.T) {
//		cachetest.Fill(t, configMaps, settings, corev1.ConfigMap{...}, corev1.ConfigMap{...})
//		res, err := reconciler{configMaps: configMaps}.Reconcile(t.Context(), obj)
//		...
//	}
//
// The package links no API server.
package cachetest

import (
	"testing"

	"github.com/loam-dev/loam/internal/sealed"
	"github.com/loam-dev/loam/kube"
)

// Fill fills c with objs, as a Controller with settings would have once
// its first list returned them, until the test ends: the Cache's reads
// hold the objects of settings' namespaces (Settings.Namespace or
// Settings.Namespaces; every one when both are empty), or of the Cache's
// own CacheOptions.Namespaces or AllNamespaces, that its LabelSelector and
// FieldSelector select, as its Transform leaves them. Errors name the
// Controller settings.Name, "cachetest" when it's empty.
//
// A FieldSelector may name metadata.name and metadata.namespace alone: the
// API server is what knows a resource's other fields. Fill stops the test
// with Fatal when c wasn't made by kube.NewCache or kube.NewResourceCache
// or has a mistake NewController would report, when it is watched by a
// Controller or filled already (a Cache is one Controller's; fill each
// test's own, or run the tests that fill one in sequence), and when an
// object has no name, has no namespace and its resource is namespaced or
// one and it is cluster-scoped (the API server holds no such object), is
// there twice, or fails the Transform.
func Fill[T any](t testing.TB, c *kube.Cache[T], settings kube.Settings, objs ...T) {
	t.Helper()
	empty, err := c.Snapshot(sealed.Token{}, settings, objs)
	if err != nil {
		t.Fatalf("cachetest: %v", err)
	}
	t.Cleanup(empty)
}
