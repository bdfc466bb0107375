package informer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// compactClient is the dynamic client NewDynamicClient returns:
// client-go's, on serializers that decode watched objects into the
// compact form, and a list of the primary resource decoded into that form
// too, in place of the dynamic client's list, which decodes each object
// into maps of interface values, twice.
type compactClient struct {
	*dynamic.DynamicClient
	rest rest.Interface
	// params encodes a list's options into its query, as the dynamic
	// client's own codec does.
	params runtime.ParameterCodec
}

// compactLister lists a resource's objects into the compact form.
type compactLister interface {
	listCompact(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*compactList, error)
}

var _ compactLister = (*compactClient)(nil)

// newCompactClient returns the compactClient of rc, a REST client with
// compactSerializers.
func newCompactClient(rc *rest.RESTClient) *compactClient {
	// dynamic's parameter codec, built as dynamic/scheme.go builds it.
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return &compactClient{DynamicClient: dynamic.New(rc), rest: rc, params: runtime.NewParameterCodec(s)}
}

// listCompact lists gvr's objects in namespace, "" for all, with opts, as
// the dynamic client's List does, the same request and the same errors,
// and decodes the answer into a *compactList.
func (c *compactClient) listCompact(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*compactList, error) {
	if msgs := rest.IsValidPathSegmentName(namespace); len(msgs) != 0 {
		return nil, fmt.Errorf("invalid namespace %q: %v", namespace, msgs)
	}
	// The dynamic client's path of a collection.
	path := []string{"apis", gvr.Group}
	if gvr.Group == "" {
		path = []string{"api"}
	}
	path = append(path, gvr.Version)
	if namespace != "" {
		path = append(path, "namespaces", namespace)
	}
	path = append(path, gvr.Resource)
	out := &compactList{}
	err := c.rest.Get().AbsPath(path...).
		SpecificallyVersionedParams(&opts, c.params, schema.GroupVersion{Version: "v1"}).
		Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// compactList is a list of the primary resource with its items as the
// cache holds them: all that client-go's reflector and pager read of a
// list, its resourceVersion, continue token and items.
type compactList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*cached
}

// DeepCopyObject returns a copy of l, whose items are copies of l's.
func (l *compactList) DeepCopyObject() runtime.Object {
	cp := &compactList{TypeMeta: l.TypeMeta, Items: make([]*cached, len(l.Items))}
	l.DeepCopyInto(&cp.ListMeta)
	for i, item := range l.Items {
		cp.Items[i] = item.DeepCopyObject().(*cached)
	}
	return cp
}

// decodeList decodes data, a list, into list: from the wire when it reads
// JSON and the list is one client-go's serializer would read alike, and
// else with the serializer it wraps, into an UnstructuredList, whose items
// are then made compact, so that it is read as client-go reads it, or
// refused with client-go's own error.
func (s compactSerializer) decodeList(data []byte, defaults *schema.GroupVersionKind, list *compactList) error {
	if s.wire && defaults == nil {
		if readList(data, list) {
			return nil
		}
		*list = compactList{}
	}
	var u unstructured.UnstructuredList
	if _, _, err := s.Serializer.Decode(data, defaults, &u); err != nil {
		return err
	}
	return list.from(&u)
}

// from sets l to u, its items made compact. It fails only when an item
// holds a value JSON can't encode, which no decoded object does.
func (l *compactList) from(u *unstructured.UnstructuredList) error {
	l.APIVersion, l.Kind = u.GetAPIVersion(), u.GetKind()
	l.ResourceVersion, l.Continue = u.GetResourceVersion(), u.GetContinue()
	l.SelfLink = u.GetSelfLink() //nolint:staticcheck // deprecated, but kept as client-go's list keeps it: the parity fuzz compares them
	l.RemainingItemCount = u.GetRemainingItemCount()
	l.Items = make([]*cached, 0, len(u.Items))
	for i := range u.Items {
		c, err := compactUnstructured(&u.Items[i])
		if err != nil {
			return err
		}
		l.Items = append(l.Items, c)
	}
	return nil
}

// readList reads data, a list, into list, each item straight into the
// compact form, as client-go's serializer reads it into an
// UnstructuredList and its items into Unstructureds, which the informer
// then makes compact: an item with neither a kind nor an apiVersion gets
// the list's kind, without its List, and apiVersion. It reports false,
// having read nothing it can be sure client-go would read alike, for a
// list that isn't one the wire decoder reads as client-go does: JSON
// encoding/json refuses, a list without a kind or with an apiVersion
// that names no group and version, a kind or apiVersion read otherwise
// ignoring case, items that aren't an array of objects, an item whose
// kind and apiVersion are empty or aren't strings.
func readList(data []byte, list *compactList) bool {
	s := scanner{data: data}
	var types typeMembers
	var metadata, items member
	var hasMetadata, hasItems bool
	err := s.object(0, func(m member) error {
		v := data[m.valueStart:m.valueEnd]
		switch {
		case m.key(data, "metadata"):
			metadata, hasMetadata = m, true
		case m.key(data, "items"):
			items, hasItems = m, true
		case m.key(data, "kind"):
			types.kind = types.read(v)
		case m.key(data, "apiVersion"):
			types.apiVersion = types.read(v)
		case foldsToTypeName(data, m):
			types.odd = true
		}
		return nil
	})
	// client-go's list needs a kind, and an apiVersion
	// schema.ParseGroupVersion reads.
	if err != nil || !s.atEnd() || types.odd || len(types.kind) == 0 || bytes.Count(types.apiVersion, []byte("/")) > 1 {
		return false
	}
	list.Kind, list.APIVersion = string(types.kind), string(types.apiVersion)
	if hasMetadata && data[metadata.valueStart] == '{' {
		ms := scanner{data: data, pos: metadata.valueStart}
		_ = ms.object(1, func(m member) error {
			readListMeta(data, m, &list.ListMeta)
			return nil
		})
	}
	if !hasItems || data[items.valueStart] == 'n' {
		return true
	}
	if data[items.valueStart] != '[' {
		return false
	}
	// The members an item with neither a kind nor an apiVersion gets, as
	// encoding/json writes them, for the JSON the cache keeps.
	kind, _ := json.Marshal(strings.TrimSuffix(list.Kind, "List"))
	apiVersion, _ := json.Marshal(list.APIVersion)
	alone := fmt.Appendf(nil, `"kind":%s,"apiVersion":%s`, kind, apiVersion)
	first := fmt.Appendf(nil, "%s,", alone)
	is := scanner{data: data, pos: items.valueStart}
	err = is.array(1, func(start, end int) error {
		o, err := readObject(data[start:end])
		if err != nil {
			return err
		}
		var c *cached
		switch t := o.types; {
		case len(t.kind) > 0 || len(t.apiVersion) > 0:
			c = o.compact(nil)
		case t.named > 0:
			// A kind or apiVersion that is empty or not a string, which
			// the dynamic client's list replaces.
			return errIrregular
		case o.members == 0:
			c = o.compact(alone)
		default:
			c = o.compact(first)
		}
		list.Items = append(list.Items, c)
		return nil
	})
	return err == nil
}

// errIrregular stops readList at an item it can't read as client-go does.
var errIrregular = errors.New("an item the wire decoder leaves to client-go")

// readListMeta sets the field of meta that m, a member of a list's
// metadata, holds, as the UnstructuredList's accessors read it: a field of
// a type the API server never sends reads as absent.
func readListMeta(data []byte, m member, meta *metav1.ListMeta) {
	v := data[m.valueStart:m.valueEnd]
	switch {
	case m.key(data, "resourceVersion"):
		meta.ResourceVersion = text(v)
	case m.key(data, "continue"):
		meta.Continue = text(v)
	case m.key(data, "selfLink"):
		meta.SelfLink = text(v) //nolint:staticcheck // deprecated, but read as client-go reads it
	case m.key(data, "remainingItemCount"):
		// An int64 as sigs.k8s.io/json reads a number into one: an
		// integer, in range; anything else, such as 1.0, reads as absent.
		meta.RemainingItemCount = nil
		if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			meta.RemainingItemCount = &n
		}
	}
}
