// Package memcached is the kubebuilder book's Memcached operator written on
// loam: a Memcached custom resource whose controller applies a Deployment
// of memcached pods, with the flags of a ConfigMap the Memcached names,
// and reports how many are ready. It is the example the documentation
// walks through, and its tests are the patterns an end user copies.
package memcached
