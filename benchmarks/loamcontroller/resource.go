// Package loamcontroller is the comparison's loam controller, written as
// an end user writes one: a Resource, a Reconciler, and an Init that
// app.Main runs. Its Reconciler does the work controller-runtime's does in
// package crcontroller, line for line.
package loamcontroller

import (
	"github.com/loam-dev/loam/benchmarks/memcached"
	"github.com/loam-dev/loam/kube"
)

// spec and status are what Resource's Rules point into.
var (
	spec   memcached.Spec
	status memcached.Status
)

// Resource is the Memcached custom resource as loam declares it. Its CRD,
// reflected from memcached.Spec and memcached.Status, is the one the
// harness installs for both controllers.
var Resource = kube.Resource[memcached.Spec, memcached.Status]{
	Group:   memcached.Group,
	Version: memcached.Version,
	Kind:    memcached.Kind,
	Plural:  memcached.Plural,
	Scope:   kube.Namespaced,
	Rules: []kube.TypeRules{
		kube.Rules(&spec, kube.Field(&spec.Size).Minimum(1)),
		kube.Rules(&status, kube.Field(&status.Conditions).ListMap("type")),
	},
}
