// Package cloudtoken fills a kube.Connection for a managed cluster on EKS,
// GKE or AKS: the API server's endpoint and CA, and a Token function built
// on the cloud's own SDK, since loam reads no kubeconfig and runs no exec
// plugin. Its code is what docs/kubernetes.md "Connecting to cloud
// clusters" quotes, in a module of its own so that the SDKs are no
// dependency of the library or of the other examples.
//
// Each Token function returns a fresh token, or the SDK's cached one, on
// every call; the Client calls it at most once a minute and keeps the last
// token when a call fails, so none of them caches on its own.
package cloudtoken
