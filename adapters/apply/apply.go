// Package apply makes a controller's own writes with server-side apply,
// through a client-go REST client: the status an object's reconcile
// returns, to the status subresource, and the controller's finalizer, as
// an apply of the object's metadata. It implements ports.Writer. It also
// applies whole objects a controller controls, for kube's Resource.Apply.
//
// A Writer reads no more of a response than it uses. The API server
// answers an apply with the whole object, but the apply that adds the
// finalizer needs only its status code; a status apply, only the status
// the server stored, which the controller compares the next pass's
// status with; the apply that removes the finalizer, only the object's
// finalizers and managedFields.
// An error's body, a metav1.Status, becomes an *apierrors.StatusError as
// client-go's other clients return it.
//
// Every apply names the object's uid. An apply that would create an object
// fails when its body names a uid, so the controller never recreates an
// object deleted since its cache saw it; and an apply of the metadata that
// names another object's uid fails as a change to an immutable field, so
// the finalizer never reaches another object created under the same name.
// The status subresource ignores the metadata it is sent, so a status
// apply is not held to the uid: one made just as its object is replaced
// lands on the new object, whose creation reconciles it, and its status is
// applied again.
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/ports"
)

// Config is the resource a Writer writes, and as whom.
type Config struct {
	// Client is the REST client the applies are sent through, as
	// NewClient returns it: each request names its whole path, so the
	// client needs no group version of its own, and it must decode an
	// error's JSON body into a *metav1.Status.
	Client rest.Interface
	// GVR names the resource.
	GVR schema.GroupVersionResource
	// Kind is the kind of the resource's objects, such as Memcached.
	Kind string
	// FieldManager is the field manager every apply is made under: the
	// controller's name.
	FieldManager string
}

// NewClient returns the REST client a Writer sends its applies through,
// on a copy of c: its transport, host and rate limits are c's, so the
// applies pass through the same layers as every other request made on c.
// It speaks JSON only, as client-go's dynamic client does by default, and
// decodes nothing but an error's metav1.Status.
func NewClient(c *rest.Config) (*rest.RESTClient, error) {
	c = rest.CopyConfig(c)
	c.GroupVersion = nil
	c.APIPath = ""
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = statusSerializer()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return rest.UnversionedRESTClientFor(c)
}

// statusSerializer decodes the JSON of a metav1.Status, the body of every
// error the API server returns, keeping its kind and apiVersion, as the
// dynamic client's does.
func statusSerializer() runtime.NegotiatedSerializer {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{
		MediaType:        "application/json",
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{}),
	})
}

// Writer applies the statuses and the finalizer of one resource's objects.
type Writer struct {
	c Config
	// head is the start of every body the Writer sends, up to the
	// object's name: its apiVersion, kind and the metadata's opening.
	head []byte
	// prefix is the path of the resource's group version: /api/v1 for the
	// core group, /apis/<group>/<version> for the others.
	prefix string
}

var _ ports.Writer = (*Writer)(nil)

// New returns a Writer of c. It fails, naming every mistake, when c has no
// Client, no Version or Resource in its GVR, no Kind or no FieldManager.
func New(c Config) (*Writer, error) {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("apply: Config.Client is nil"))
	}
	if c.GVR.Version == "" || c.GVR.Resource == "" {
		errs = append(errs, fmt.Errorf("apply: Config.GVR %q has no Version or no Resource", c.GVR))
	}
	if c.Kind == "" {
		errs = append(errs, errors.New("apply: Config.Kind is empty"))
	}
	if c.FieldManager == "" {
		errs = append(errs, errors.New("apply: Config.FieldManager is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	prefix := path.Join("/apis", c.GVR.Group, c.GVR.Version)
	if c.GVR.Group == "" {
		prefix = path.Join("/api", c.GVR.Version)
	}
	return &Writer{c: c, head: envelope(c.GVR.Group, c.GVR.Version, c.Kind), prefix: prefix}, nil
}

// body returns the body of an apply to the object key and uid, with
// finalizer among its finalizers when finalizers is true, and status
// unless it is empty, in a buffer of its own: the transport may read it
// after the request is answered, and client-go resends it whole on a
// retry. It fails when status isn't JSON.
func (w *Writer) body(key ports.Key, uid types.UID, finalizer string, finalizers bool, status []byte) ([]byte, error) {
	// Room for the whole body unless a string needs escaping: one
	// allocation, as json.Marshal's result was.
	size := len(w.head) + len(key.Name) + len(key.Namespace) + len(uid) + len(finalizer) + len(status) +
		len(`"","namespace":"","uid":"","finalizers":[""]},"status":}`)
	return appendBody(make([]byte, 0, size), w.head, key, uid, finalizer, finalizers, status)
}

// ApplyStatus applies status, a JSON object, to the status subresource of
// the object key and uid name, forcing, since the controller owns the
// status whole. It returns the status as the API server stored it, which
// its answer holds, defaulted and pruned by the resource's schema; nil
// when the answer has none or can't be read. It returns the API server's
// error, such as a Conflict when the object is gone.
func (w *Writer) ApplyStatus(ctx context.Context, key ports.Key, uid types.UID, status []byte) ([]byte, error) {
	data, err := w.body(key, uid, "", false, status)
	// Empty is no JSON either, though body leaves an empty status out.
	if err != nil || len(status) == 0 {
		return nil, fmt.Errorf("the status %.40q is not JSON", status)
	}
	answer, err := w.send(ctx, key, data, true, "status")
	if err != nil {
		return nil, err
	}
	return readStatus(answer), nil
}

// ApplyFinalizer applies the metadata of the object key and uid name with
// finalizer among its finalizers when present is true, and without it
// otherwise, which removes it unless another field manager set it too.
// Then the finalizer stays, and ApplyFinalizer returns a
// *ports.FinalizerHeldError naming the field managers that hold it.
//
// Removing the finalizer from an object that is gone succeeds: the
// finalizer went with it. That happens when a reconcile works from a
// cache that hasn't yet seen the deletion its previous removal let
// happen.
func (w *Writer) ApplyFinalizer(ctx context.Context, key ports.Key, uid types.UID, finalizer string, present bool) error {
	data, err := w.body(key, uid, finalizer, present, nil)
	if err != nil {
		return err // no status, so never
	}
	// Not forced: finalizers are a set, whose items two managers can share
	// without conflict, so a conflict is news worth failing on.
	answer, err := w.send(ctx, key, data, false, "")
	if err != nil && !present && gone(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if present {
		discard(answer)
		return nil
	}
	// Of the object, only what tells whether the finalizer stayed, and who
	// holds it.
	var o struct {
		Metadata struct {
			Finalizers    []string       `json:"finalizers"`
			ManagedFields []managedEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	err = json.NewDecoder(answer).Decode(&o)
	discard(answer)
	if err != nil {
		return fmt.Errorf("reading the answer to the apply of %s: %w", key, err)
	}
	if !slices.Contains(o.Metadata.Finalizers, finalizer) {
		return nil
	}
	return &ports.FinalizerHeldError{Finalizer: finalizer, Managers: holders(o.Metadata.ManagedFields, finalizer, w.c.FieldManager)}
}

// managedEntry is what holders reads of a managedFields entry.
type managedEntry struct {
	Manager  string          `json:"manager"`
	FieldsV1 json.RawMessage `json:"fieldsV1"`
}

// gone reports whether err says the object an apply named is no longer
// there: not found, or a Conflict without field-manager conflicts, which
// is how the API server refuses an apply whose uid matches no object
// rather than create one.
func gone(err error) bool {
	if apierrors.IsNotFound(err) {
		return true
	}
	if !apierrors.IsConflict(err) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict {
				return false
			}
		}
	}
	return true
}

// send applies data, an object's JSON, to the object key, or to its
// subresource unless that is empty. When the API server accepts the
// apply, send returns the body of its answer, the whole object, unread,
// for the caller to read what it needs of it and then discard. When it
// refuses it, send returns the error client-go's clients return: the
// Status the API server sent, as an *apierrors.StatusError.
func (w *Writer) send(ctx context.Context, key ports.Key, data []byte, force bool, subresource string) (io.ReadCloser, error) {
	req, err := w.request(key, data, force, subresource)
	if err != nil {
		return nil, err
	}
	// Stream, not Do: Do reads the whole answer into a buffer, and a
	// success needs none of it. An answer that isn't a success Stream
	// reads and decodes as Do does, retries included.
	return req.Stream(ctx)
}

// request returns the apply of data, an object's JSON, to the object key,
// or to its subresource unless that is empty, under the Writer's field
// manager. The path, the query and the checks of key's names are those of
// client-go's dynamic client.
func (w *Writer) request(key ports.Key, data []byte, force bool, subresource string) (*rest.Request, error) {
	if key.Name == "" {
		return nil, errors.New("name is required")
	}
	if msgs := rest.IsValidPathSegmentName(key.Namespace); len(msgs) != 0 {
		return nil, fmt.Errorf("invalid namespace %q: %v", key.Namespace, msgs)
	}
	if msgs := rest.IsValidPathSegmentName(key.Name); len(msgs) != 0 {
		return nil, fmt.Errorf("invalid resource name %q: %v", key.Name, msgs)
	}
	segments := make([]string, 0, 6)
	segments = append(segments, w.prefix)
	if key.Namespace != "" {
		segments = append(segments, "namespaces", key.Namespace)
	}
	segments = append(segments, w.c.GVR.Resource, key.Name)
	if subresource != "" {
		segments = append(segments, subresource)
	}
	return w.c.Client.Patch(types.ApplyPatchType).
		AbsPath(segments...).
		Param("fieldManager", w.c.FieldManager).
		Param("force", strconv.FormatBool(force)).
		Body(data), nil
}

// discard reads the rest of answer, the body of an accepted apply's
// answer, without keeping it, so that its connection serves the next
// request, and closes it. An answer cut short changes nothing: its status
// code said the apply was made.
func discard(answer io.ReadCloser) {
	_, _ = io.Copy(io.Discard, answer)
	_ = answer.Close()
}

// holders returns the field managers other than self whose managed fields
// hold finalizer, in the order the object lists them.
func holders(entries []managedEntry, finalizer, self string) []string {
	// A set's item is keyed by its value's JSON: v:"example.com/finalizer".
	value, err := json.Marshal(finalizer)
	if err != nil {
		return nil
	}
	item := "v:" + string(value)
	var managers []string
	for _, e := range entries {
		if e.Manager == self || e.FieldsV1 == nil || slices.Contains(managers, e.Manager) {
			continue
		}
		var fields struct {
			Metadata struct {
				Finalizers map[string]json.RawMessage `json:"f:finalizers"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(e.FieldsV1, &fields) != nil {
			continue
		}
		if _, ok := fields.Metadata.Finalizers[item]; ok {
			managers = append(managers, e.Manager)
		}
	}
	return managers
}
