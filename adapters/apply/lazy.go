package apply

import (
	"sync"

	"k8s.io/client-go/rest"
)

// Lazy returns a function that builds, on its first call, the REST client
// NewClient builds on config(), and returns that client, or that error,
// on every call: the client of Resource.Apply, shared by every apply
// through one Client, and built only if one is ever sent.
func Lazy(config func() *rest.Config) func() (*rest.RESTClient, error) {
	return sync.OnceValues(func() (*rest.RESTClient, error) { return NewClient(config()) })
}
