package kube

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Scope says where a resource's objects live: in a namespace, or in the
// cluster as a whole.
type Scope string

const (
	// Namespaced objects live in a namespace, as Deployments do.
	Namespaced Scope = "Namespaced"
	// Cluster objects belong to no namespace, as Namespaces do.
	Cluster Scope = "Cluster"
)

// valid reports whether s is Namespaced or Cluster.
func (s Scope) valid() bool { return s == Namespaced || s == Cluster }

// Resource declares a custom resource as Go values: its names, its scope,
// its spec and status as the Go types Spec and Status, and the Rules that
// constrain them. Its CRD is reflected from the types, as encoding/json
// encodes them, and has one version, served and stored, with the status
// subresource. One of its objects is an Object[Spec, Status].
//
// A Resource is usually a package-level variable, next to the values its
// Rules point into.
type Resource[Spec, Status any] struct {
	// Group is the API group, a DNS subdomain such as cache.example.com.
	Group string
	// Version is the one version of the resource, such as v1alpha1.
	Version string
	// Kind names the resource's objects, such as Memcached. The CRD's
	// singular name is Kind in lower case, and its list kind Kind+"List".
	Kind string
	// Plural names the resource in URLs and to kubectl, such as memcacheds.
	Plural string
	// Scope is Namespaced or Cluster.
	Scope Scope
	// Rules constrain the schemas of Spec, of Status and of the types they
	// hold, one TypeRules for each type.
	Rules []TypeRules
	// ShortNames are kubectl's abbreviations of the resource, such as mc.
	ShortNames []string
	// Categories are groups of resources that kubectl get takes as one
	// name, such as all.
	Categories []string
	// Columns are the columns kubectl get prints for the resource's
	// objects, after the name. When there are any, an Age column follows
	// them, as kubectl prints by default.
	Columns []PrinterColumn
}

// GVR names the resource to client-go's dynamic client: the Group, the
// Version and the Plural.
func (r Resource[Spec, Status]) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Plural}
}
