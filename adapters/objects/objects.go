// Package objects reads and writes the objects of one resource as JSON,
// through a client-go REST client: create, get, update (of the object or
// of its status subresource), delete and list, each one request. It is
// the I/O under kube's ResourceClient, which encodes and decodes the end
// user's typed objects.
//
// An error's body, a metav1.Status, becomes an *apierrors.StatusError, as
// client-go's other clients return it, so apierrors.IsNotFound and the
// like read it.
package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/apply"
	"github.com/loam-dev/loam/ports"
)

// Client reads and writes the objects of one resource.
type Client struct {
	rc  rest.Interface
	gvr schema.GroupVersionResource
	// prefix is the path of the resource's group version: /api/v1 for the
	// core group, /apis/<group>/<version> for the others.
	prefix string
}

// New returns a Client of gvr's objects on a copy of c, whose transport
// and host it keeps: requests pass through the same layers as every other
// made on c. It fails when gvr has no Version or Resource, or c is nil.
func New(c *rest.Config, gvr schema.GroupVersionResource) (*Client, error) {
	var errs []error
	if c == nil {
		errs = append(errs, errors.New("objects: the rest.Config is nil"))
	}
	if gvr.Version == "" || gvr.Resource == "" {
		errs = append(errs, fmt.Errorf("objects: the resource %q has no Version or no Resource", gvr))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rc, err := apply.NewClient(c)
	if err != nil {
		return nil, fmt.Errorf("objects: %w", err)
	}
	prefix := path.Join("/apis", gvr.Group, gvr.Version)
	if gvr.Group == "" {
		prefix = path.Join("/api", gvr.Version)
	}
	return &Client{rc: rc, gvr: gvr, prefix: prefix}, nil
}

// collection is the path of the resource's objects in namespace, "" for
// every namespace or a cluster-scoped resource.
func (c *Client) collection(namespace string) string {
	if namespace == "" {
		return path.Join(c.prefix, c.gvr.Resource)
	}
	return path.Join(c.prefix, "namespaces", namespace, c.gvr.Resource)
}

// Create creates the object doc in namespace and returns it as the API
// server stored it.
func (c *Client) Create(ctx context.Context, namespace string, doc []byte) ([]byte, error) {
	return raw(c.rc.Post().AbsPath(c.collection(namespace)).Body(doc).Do(ctx))
}

// Get returns the object key names.
func (c *Client) Get(ctx context.Context, key ports.Key) ([]byte, error) {
	return raw(c.rc.Get().AbsPath(c.collection(key.Namespace), key.Name).Do(ctx))
}

// Update replaces the object key names with doc, or its status when
// status is set, and returns it as the API server stored it. doc's
// resourceVersion, when set, makes the update fail with a conflict if the
// object has changed since.
func (c *Client) Update(ctx context.Context, key ports.Key, doc []byte, status bool) ([]byte, error) {
	p := path.Join(c.collection(key.Namespace), key.Name)
	if status {
		p = path.Join(p, "status")
	}
	return raw(c.rc.Put().AbsPath(p).Body(doc).Do(ctx))
}

// Delete deletes the object key names, as opts say.
func (c *Client) Delete(ctx context.Context, key ports.Key, opts metav1.DeleteOptions) error {
	body, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("objects: encoding the DeleteOptions: %w", err)
	}
	return c.rc.Delete().AbsPath(c.collection(key.Namespace), key.Name).Body(body).Do(ctx).Error()
}

// List returns the list of the objects of namespace, or of every
// namespace when it is "", that opts select.
func (c *Client) List(ctx context.Context, namespace string, opts metav1.ListOptions) ([]byte, error) {
	return raw(c.rc.Get().AbsPath(c.collection(namespace)).VersionedParams(&opts, metav1.ParameterCodec).Do(ctx))
}

// raw returns res's body, or its error decoded from the API server's
// Status: Result.Raw returns client-go's generic "the server rejected our
// request" error, without the Status's message and causes, where
// Result.Error decodes them.
func raw(res rest.Result) ([]byte, error) {
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}
