// Package e2e holds loam's whole-App tests: each runs an App against a real
// API server, a kubetest cluster shared by the package, in a namespace of
// its own. They live in one package because every test binary that links
// the API server costs about 180 MB and ten seconds to link.
package e2e
