package ports

// Key names one object: its namespace, empty for a cluster-scoped object,
// and its name. It is what the work queue holds, so an object is queued
// once however often it changes before a worker takes it.
type Key struct {
	Namespace string
	Name      string
}

// String returns key as client-go's cache keys read: namespace/name, or the
// name alone for a cluster-scoped object.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}
