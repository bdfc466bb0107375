package kube

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/apply"
)

// BenchmarkApply is one apply of a child object, Resource.Apply's whole
// cost on the client: checking the object, encoding it, the request built
// and sent, and the answer, the object the API server stored, decoded. The
// API server answers without a network, so what is counted is the
// client's alone.
func BenchmarkApply(b *testing.B) {
	memcacheds := Resource[benchSpec, benchStatus]{
		Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached", Plural: "memcacheds", Scope: Namespaced,
	}
	answer, err := json.Marshal(benchContent())
	if err != nil {
		b.Fatal(err)
	}
	api := &cannedAPI{answer: answer}
	c := &Client{server: "api.example.com", applies: apply.Lazy(func() *rest.Config {
		return &rest.Config{Host: "https://api.example.com", Transport: api, QPS: -1}
	})}
	obj := benchObject{
		ObjectMeta: metav1.ObjectMeta{
			Name: "memcached-sample", Namespace: "default",
			Labels: map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": "sample"},
		},
		Spec: benchSpec{Size: 3, Image: "memcached:1.6.26-alpine3.19"},
	}
	opts := ApplyOptions{FieldManager: "parent-controller", Owner: Owner{
		APIVersion: "example.com/v1", Kind: "Parent", Name: "p", UID: "5f1c9a3e-8a52-4a1e-9a4c-0b7f7a1f3c21", Namespace: "default",
	}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := memcacheds.Apply(b.Context(), c, obj, opts); err != nil {
			b.Fatal(err)
		}
	}
	if api.requests.Load() == 0 {
		b.Fatal("no apply was sent")
	}
}
