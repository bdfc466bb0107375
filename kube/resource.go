package kube

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/loam-dev/loam/domain/crd"
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

// mistakes returns the error of a Scope that is neither Namespaced nor
// Cluster, or none.
func (s Scope) mistakes() []error {
	if s == Namespaced || s == Cluster {
		return nil
	}
	return []error{fmt.Errorf("the Scope %q is neither Namespaced nor Cluster", s)}
}

// Resource declares a custom resource as Go values: its names, its scope,
// its spec and status as the Go types Spec and Status, and the Rules that
// constrain them. Its CRD is reflected from the types, as encoding/json
// encodes them, and has one version, served and stored, with the status
// subresource. One of its objects is an Object[Spec, Status]. A Resource
// with Versions has more: it is their hub, the version the API server
// stores, and every other version converts to and from it.
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
	// Scale is the resource's scale subresource, which Scale makes, so
	// kubectl scale and a HorizontalPodAutoscaler can set its replicas.
	// The zero ScaleSubresource is none: /scale is not found.
	Scale ScaleSubresource
	// Unserved says the API server does not serve this version: it still
	// converts objects to and from it, and may store it. The zero value
	// serves it.
	Unserved bool
	// Deprecated marks the version deprecated: the API server returns a
	// warning with every request to it, DeprecationWarning, or its own
	// words when that is empty.
	Deprecated bool
	// DeprecationWarning is the warning of a Deprecated version; set
	// without Deprecated, it is a mistake CRD reports.
	DeprecationWarning string
	// Versions are the resource's other versions, each made by Spoke or
	// Unconverted, converted to and from this one, which is the version
	// the API server stores (the hub). None, the resource has one version.
	Versions []Version
	// Conversion says how the API server reaches the conversion webhook
	// when a Spoke converts through it, which Webhooks serves with the
	// hook Conversion makes. CRD reports it missing then, and set when no
	// version converts through a webhook.
	Conversion *WebhookClient
}

// GVR names the resource to client-go's dynamic client: the Group, the
// Version and the Plural.
func (r Resource[Spec, Status]) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Plural}
}

// Version is one other version of a Resource, which Spoke or Unconverted
// makes: its own Resource, minus what the hub's decides, and how its
// objects convert to and from the hub's. The zero Version is a mistake CRD
// reports.
type Version struct {
	// res is the version's own Resource, with its Go types erased.
	res versionResource
	// hubSpec and hubStatus are the types a Spoke's functions convert to
	// and from; Unconverted's are nil.
	hubSpec, hubStatus reflect.Type
	// missing names a Spoke's nil functions.
	missing []string
	// toHub converts an object of this version, as JSON, to the hub's
	// type; fromHub converts one of the hub's to this version. Each fills
	// the target's TypeMeta with to.
	toHub, fromHub func(obj []byte, to metav1.TypeMeta) ([]byte, error)
	unconverted    bool
}

// versionResource is what a Version keeps of its own Resource.
type versionResource struct {
	group, version, kind, plural string
	scope                        Scope
	shortNames, categories       []string
	def                          crd.VersionDefinition
	hasVersions, hasConversion   bool
}

// erase keeps what a Version needs of r.
func (r Resource[Spec, Status]) erase() versionResource {
	return versionResource{
		group: r.Group, version: r.Version, kind: r.Kind, plural: r.Plural, scope: r.Scope,
		shortNames: r.ShortNames, categories: r.Categories,
		def: crd.VersionDefinition{
			Name: r.Version, Spec: reflect.TypeFor[Spec](), Status: reflect.TypeFor[Status](),
			Rules: r.Rules, Columns: r.Columns, Scale: r.Scale,
			Unserved: r.Unserved, Deprecated: r.Deprecated, DeprecationWarning: r.DeprecationWarning,
		},
		hasVersions:   len(r.Versions) > 0,
		hasConversion: r.Conversion != nil,
	}
}

// Spoke is the version r of a hub Resource whose Spec and Status are
// HubSpec and HubStatus, converted to the hub by up and from it by down.
// r is the spoke's own Resource: the hub's Group, Kind, Plural and Scope,
// its ShortNames and Categories empty or the hub's, no Versions or
// Conversion of its own, and its own Version, Rules, Columns, Scale,
// Unserved and Deprecated. Before it calls up or down, loam fills to's TypeMeta with the
// target's apiVersion and Kind, and its ObjectMeta with from's; the
// function sets Spec and Status, and may change labels and annotations but
// nothing else in the metadata, which the API server would reject: a
// conversion that does fails for that object, with an error naming the
// field. An error from up or down fails the conversion of the object it
// was given. The hub's CRD reports a nil up or down, and HubSpec and
// HubStatus that are not the hub's Spec and Status, with its other
// mistakes.
func Spoke[Spec, Status, HubSpec, HubStatus any](
	r Resource[Spec, Status],
	up func(from Object[Spec, Status], to *Object[HubSpec, HubStatus]) error,
	down func(from Object[HubSpec, HubStatus], to *Object[Spec, Status]) error,
) Version {
	v := Version{
		res:       r.erase(),
		hubSpec:   reflect.TypeFor[HubSpec](),
		hubStatus: reflect.TypeFor[HubStatus](),
	}
	if up == nil {
		v.missing = append(v.missing, "up")
	}
	if down == nil {
		v.missing = append(v.missing, "down")
	}
	if up != nil && down != nil {
		v.toHub = func(obj []byte, to metav1.TypeMeta) ([]byte, error) { return convertTyped(obj, to, up) }
		v.fromHub = func(obj []byte, to metav1.TypeMeta) ([]byte, error) { return convertTyped(obj, to, down) }
	}
	return v
}

// Unconverted is the version r of a hub Resource whose schema is the
// hub's, as the API server converts it: changing apiVersion alone. r is
// the version's own Resource, as Spoke's is; its Spec and Status may be
// other Go types than the hub's, but their schemas, with r's Rules, must
// be the hub's, or the hub's CRD reports the difference.
func Unconverted[Spec, Status any](r Resource[Spec, Status]) Version {
	return Version{res: r.erase(), toHub: setAPIVersion, fromHub: setAPIVersion, unconverted: true}
}

// made reports whether Spoke or Unconverted made v.
func (v Version) made() bool { return v.res.def.Spec != nil }
