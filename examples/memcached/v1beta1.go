package memcached

import (
	"regexp"

	"github.com/loam-dev/loam/kube"
)

// ReplicasSpec is what a Memcached of cache.example.com/v1beta1 declares:
// v1alpha1's MemcachedSpec with size renamed replicas, as Deployments name
// it, and an image that is no longer held to memcached's Docker Hub
// repository by the schema: the operator's validating webhook checks it
// against the registries the operator allows, which a CRD can't know.
type ReplicasSpec struct {
	Replicas int32 `json:"replicas"`
	// Image is empty only until the defaulting webhook sets the
	// operator's default image, which the API server stores.
	Image     string `json:"image,omitempty"`
	ConfigMap string `json:"configMap,omitempty"`
}

// ObjectV1beta1 is one Memcached as v1beta1 serves it.
type ObjectV1beta1 = kube.Object[ReplicasSpec, MemcachedStatus]

// specV1beta1 and statusV1beta1 are what MemcachedV1beta1's Rules point
// into.
var (
	specV1beta1   ReplicasSpec
	statusV1beta1 MemcachedStatus
)

// MemcachedV1beta1 is the Memcached custom resource whole:
// cache.example.com/v1beta1, the version the API server stores, and
// Memcached, v1alpha1, still served and converted to and from it by the
// operator's conversion webhook. Its CRD is deploy/crd.yaml, which
// TestMemcachedCRD keeps true to the types. The Reconciler still
// reconciles v1alpha1: the API server converts every object it lists and
// watches, whatever version it was written in.
var MemcachedV1beta1 = kube.Resource[ReplicasSpec, MemcachedStatus]{
	Group:      Memcached.Group,
	Version:    "v1beta1",
	Kind:       Memcached.Kind,
	Plural:     Memcached.Plural,
	Scope:      Memcached.Scope,
	ShortNames: Memcached.ShortNames,
	Categories: Memcached.Categories,
	// The columns of v1alpha1, by the same names, so kubectl get prints
	// a Memcached alike in either version.
	Columns: []kube.PrinterColumn{
		kube.Column("Size", &specV1beta1.Replicas).Description("How many memcached pods run."),
		kube.Column("Ready", &statusV1beta1.ReadyReplicas).Description("How many of the pods are ready."),
		kube.ConditionColumn("Available", &statusV1beta1.Conditions, "Available").Description("Whether the Memcached serves: True, False or Unknown."),
	},
	// The scale subresource of v1alpha1, of the size renamed replicas.
	Scale: kube.Scale(&specV1beta1.Replicas, &statusV1beta1.ReadyReplicas),
	Rules: []kube.TypeRules{
		kube.Rules(&specV1beta1,
			kube.Field(&specV1beta1.Replicas).Minimum(1).Maximum(3).Description("How many memcached pods run."),
			kube.Field(&specV1beta1.Image).MaxLength(512).Pattern(imageReference).
				Description("The memcached image the pods run, from a registry the operator allows; empty, the operator's default image."),
			kube.Field(&specV1beta1.ConfigMap).MaxLength(253).Pattern(configMapName).
				Description("The name of a ConfigMap in the Memcached's namespace whose data are memcached's flags: each key k with the value v is the flag --k=v."),
		),
		kube.Rules(&statusV1beta1,
			kube.Field(&statusV1beta1.ReadyReplicas).Default(0),
			kube.Field(&statusV1beta1.Conditions).ListMap("type"),
		),
	},
	Versions: []kube.Version{
		kube.Spoke(Memcached, toV1beta1, toV1alpha1),
	},
	// kustomize's namespace replaces the Service's, and cert-manager's
	// CA injector fills the CA bundle, as deploy/ asks.
	Conversion: &kube.WebhookClient{Service: &kube.WebhookService{Namespace: "memcached-system", Name: "memcached-webhooks"}},
}

// imageReference is the shape of a container image reference, which the
// schema checks so a malformed one is refused whatever the webhook says:
// lower-case path components, an optional registry with a port, and a tag
// or a digest.
var imageReference = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[a-f0-9]{64})$`)

// toV1beta1 converts a v1alpha1 Memcached to v1beta1: size is replicas.
// Nothing is lost either way, so no annotation keeps anything for the way
// back.
func toV1beta1(from Object, to *ObjectV1beta1) error {
	to.Spec = ReplicasSpec{Replicas: from.Spec.Size, Image: from.Spec.Image, ConfigMap: from.Spec.ConfigMap}
	to.Status = from.Status
	return nil
}

// toV1alpha1 converts a v1beta1 Memcached to v1alpha1: replicas is size.
func toV1alpha1(from ObjectV1beta1, to *Object) error {
	to.Spec = MemcachedSpec{Size: from.Spec.Replicas, Image: from.Spec.Image, ConfigMap: from.Spec.ConfigMap}
	to.Status = from.Status
	return nil
}
