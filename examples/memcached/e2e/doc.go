// Package e2e runs the Memcached operator as a whole App, memcached.Init
// as its main runs it, against an API server of kubetest's that
// authorizes with RBAC, as the ServiceAccount that deploy/rbac.yaml
// grants, and proves those rules minimal: with each rule or verb taken
// away, a named operation of the operator fails. It has only tests.
package e2e
