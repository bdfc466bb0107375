// Package cachecases is the table of reads a kube.Cache answers, shared by
// kube/cachetest's unit test, which reads a Cache filled by cachetest, and
// kubetest/e2e's, which reads one a Controller fills from a real API
// server: the same reads, the same answers, so the snapshot keeps the
// watched cache's semantics.
package cachecases

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/loam-dev/loam/kube"
)

// ConfigMaps is the Kind every case caches.
var ConfigMaps = kube.Kind[corev1.ConfigMap]{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Scope: kube.Namespaced}

// Objects are the ConfigMaps the cases read, in the three namespaces ns:
// "web" (labelled app=web) and "plain" (unlabelled) in each, and "db"
// (app=db) in the first.
func Objects(ns [3]string) []corev1.ConfigMap {
	var out []corev1.ConfigMap
	for _, n := range ns {
		out = append(out,
			corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: n, Labels: map[string]string{"app": "web"}}, Data: map[string]string{"size": "3"}},
			corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: n}, Data: map[string]string{"size": "1"}},
		)
	}
	return append(out, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns[0], Labels: map[string]string{"app": "db"}}})
}

// Case is one Cache and the reads it answers.
type Case struct {
	Name string
	// Namespaces are the Controller's Settings.Namespaces; nil for every
	// namespace.
	Namespaces []string
	Options    kube.CacheOptions[corev1.ConfigMap]
	Reads      []Read
}

// Read is a Get, when Name is set, or a List of Namespace with Selector.
type Read struct {
	Namespace, Name, Selector string
	// Want are the namespace/name of the objects read, sorted; none for a
	// Get that finds nothing.
	Want []string
	// Err is what the read's error says; "" for none.
	Err string
	// Data is the "size" of the object a Get finds.
	Data string
}

// Cases returns the table, over the namespaces ns.
func Cases(ns [3]string) []Case {
	a, b, c := ns[0], ns[1], ns[2]
	k := func(n, name string) string { return n + "/" + name }
	return []Case{
		{Name: "the Controller's namespace", Namespaces: []string{a}, Reads: []Read{
			{Namespace: a, Name: "web", Want: []string{k(a, "web")}, Data: "3"},
			{Namespace: a, Name: "missing"},
			{Namespace: b, Name: "web", Err: fmt.Sprintf(`namespace %q is outside the Cache, which holds namespace %q only, as Controller cachecases's Settings.Namespaces`, b, a)},
			{Namespace: "", Want: []string{k(a, "db"), k(a, "plain"), k(a, "web")}},
			{Namespace: a, Selector: "app=web", Want: []string{k(a, "web")}},
			{Namespace: a, Selector: "app", Want: []string{k(a, "db"), k(a, "web")}},
		}},
		{Name: "the Cache's own set and a label selector", Namespaces: []string{a}, Options: kube.CacheOptions[corev1.ConfigMap]{Namespaces: []string{a, b}, LabelSelector: "app=web"}, Reads: []Read{
			{Namespace: "", Want: []string{k(a, "web"), k(b, "web")}},
			{Namespace: b, Name: "web", Want: []string{k(b, "web")}, Data: "3"},
			{Namespace: b, Name: "plain"},
			{Namespace: c, Name: "web", Err: fmt.Sprintf(`namespace %q is outside the Cache, which holds namespaces ["%s" "%s"] only, as its CacheOptions.Namespaces say`, c, a, b)},
		}},
		{Name: "every namespace, a field selector and a transform", Namespaces: []string{a}, Options: kube.CacheOptions[corev1.ConfigMap]{
			AllNamespaces: true, FieldSelector: "metadata.name=plain",
			Transform: func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"size": "dropped"} },
		}, Reads: []Read{
			{Namespace: c, Name: "plain", Want: []string{k(c, "plain")}, Data: "dropped"},
			{Namespace: c, Name: "web"},
			{Namespace: c, Want: []string{k(c, "plain")}},
		}},
	}
}

// Controller is the Settings.Name of every case's Controller.
const Controller = "cachecases"

// Check makes each of cs's reads of c and checks its answer.
func Check(t *testing.T, c *kube.Cache[corev1.ConfigMap], cs Case) {
	t.Helper()
	for _, r := range cs.Reads {
		var got []string
		var data string
		var err error
		if r.Name != "" {
			var cm corev1.ConfigMap
			var found bool
			cm, found, err = c.Get(r.Namespace, r.Name)
			if found {
				got, data = append(got, cm.Namespace+"/"+cm.Name), cm.Data["size"]
				cm.Data["size"] = "changed by the reader"
			}
		} else {
			var sel labels.Selector
			if r.Selector != "" {
				sel, err = labels.Parse(r.Selector)
				require.NoError(t, err)
			}
			var cms []corev1.ConfigMap
			cms, err = c.List(r.Namespace, sel)
			for _, cm := range cms {
				got = append(got, cm.Namespace+"/"+cm.Name)
			}
			slices.Sort(got)
		}
		if r.Err != "" {
			require.ErrorContains(t, err, r.Err, "%+v", r)
			continue
		}
		require.NoError(t, err, "%+v", r)
		want := r.Want
		if r.Name == "" {
			// A list's order is the names' order, and a test's namespaces
			// have random names.
			want = slices.Sorted(slices.Values(r.Want))
		}
		require.Equal(t, want, got, "%+v", r)
		require.Equal(t, r.Data, data, "%+v: a read returns a copy, which the last reader's change doesn't reach", r)
	}
}
