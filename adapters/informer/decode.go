package informer

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// NewDynamicClient returns a dynamic client of cfg for the primary
// informer, whose lists and watches decode each object straight from the
// bytes the API server sent into the cache's compact form. client-go's
// own decodes every object into maps of interface values (a list's twice),
// which the informer's transform then encodes again and drops: most of a
// controller's CPU at scale, and most of the memory a list takes. Every
// other request, and the Lists of its dynamic.Interface, decode as
// client-go's own dynamic client does. It fails only when cfg is one
// client-go refuses.
func NewDynamicClient(cfg *rest.Config) (dynamic.Interface, error) {
	c := dynamic.ConfigFor(cfg)
	c.NegotiatedSerializer = newCompactSerializers(c.NegotiatedSerializer)
	// As dynamic.NewForConfigAndClient does: every request names its own
	// absolute path.
	c.GroupVersion = nil
	c.APIPath = "/if-you-see-this-search-for-the-break"
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("the primary informer's client: %w", err)
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("the primary informer's client: %w", err)
	}
	return newCompactClient(rc), nil
}

// compactSerializers is the dynamic client's serializers, but that its
// JSON decoder returns a *cached when asked for no type in particular,
// which is how client-go's watch decodes each event's object, and decodes
// a list into a *compactList. Asked for any other type it decodes as the
// dynamic client does.
type compactSerializers struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newCompactSerializers(ns runtime.NegotiatedSerializer) compactSerializers {
	typed := newTypedKinds()
	infos := append([]runtime.SerializerInfo(nil), ns.SupportedMediaTypes()...)
	for i := range infos {
		json := infos[i].MediaType == runtime.ContentTypeJSON
		infos[i].Serializer = compactSerializer{Serializer: infos[i].Serializer, typed: typed, wire: json}
		if stream := infos[i].StreamSerializer; stream != nil && json {
			events := *stream
			events.Serializer = watchEventSerializer{stream.Serializer}
			infos[i].StreamSerializer = &events
		}
	}
	return compactSerializers{NegotiatedSerializer: ns, infos: infos}
}

// SupportedMediaTypes returns the dynamic client's media types, JSON's
// decoding into the compact form.
func (s compactSerializers) SupportedMediaTypes() []runtime.SerializerInfo { return s.infos }

// compactSerializer decodes an object of no type asked for into a
// *cached, and a list into a *compactList, when it reads JSON (wire), and
// everything else with the serializer it wraps.
type compactSerializer struct {
	runtime.Serializer
	typed typedKinds
	wire  bool
}

// Decode decodes data into a *cached when into is nil and data is an
// object of a kind the dynamic client decodes into maps, into a
// *compactList when into is one, and with the wrapped serializer
// otherwise: a Status, as a watch's error events carry, must decode as
// one for client-go to read the error in it, and what the wire decoder
// can't read as client-go would, an object with no apiVersion, say, or a
// kind given twice in different cases, is left to client-go, so that it
// is read as client-go reads it, or refused with client-go's own error.
func (s compactSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	switch into := into.(type) {
	case *compactList:
		if err := s.decodeList(data, defaults, into); err != nil {
			return nil, nil, err
		}
		return into, nil, nil
	case nil:
		if !s.wire || defaults != nil {
			// Only a response's error is decoded with defaults.
			break
		}
		o, err := readObject(data)
		if err != nil || !s.regular(o.types) {
			break
		}
		return o.compact(nil), nil, nil
	}
	return s.Serializer.Decode(data, defaults, into)
}

// regular reports whether an object of t is one client-go's serializer
// would decode into an *unstructured.Unstructured of the kind and
// apiVersion the wire decoder read: both are strings, read alike ignoring
// case or not, the apiVersion names a version, and the kind is not one
// the serializer decodes into a type of its own.
func (s compactSerializer) regular(t typeMembers) bool {
	if t.odd || len(t.kind) == 0 {
		return false
	}
	// schema.ParseGroupVersion's reading, without its allocations:
	// version, or group/version.
	version := t.apiVersion
	switch bytes.Count(version, []byte("/")) {
	case 0:
	case 1:
		version = version[bytes.IndexByte(version, '/')+1:]
	default:
		return false
	}
	return len(version) > 0 && !s.typed.typed(t.kind, t.apiVersion)
}

// typedKinds is the kinds the dynamic client's serializers decode into
// types of their own rather than maps: metav1's Status, WatchEvent and the
// options, as client-go's dynamic package registers them in its scheme
// (dynamic/scheme.go's basicScheme), which this one copies.
type typedKinds struct {
	scheme *runtime.Scheme
	// kinds is every kind the scheme knows, whatever its version, to
	// tell most objects apart without building their kind's strings.
	kinds map[string]bool
}

func newTypedKinds() typedKinds {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	kinds := map[string]bool{}
	for gvk := range s.AllKnownTypes() {
		kinds[gvk.Kind] = true
	}
	return typedKinds{scheme: s, kinds: kinds}
}

// typed reports whether the dynamic client's serializer decodes an object
// of kind and apiVersion into a type of its own.
func (t typedKinds) typed(kind, apiVersion []byte) bool {
	if !t.kinds[string(kind)] {
		return false
	}
	_, err := t.scheme.New(schema.FromAPIVersionAndKind(string(apiVersion), string(kind)))
	return err == nil
}

// watchEventSerializer reads a watch event's envelope, its type and its
// object's bytes, with the scanner, in place of the reflection of the
// serializer it wraps, which also walks the whole object to find its end.
// Anything but a *metav1.WatchEvent it decodes with the serializer it
// wraps.
type watchEventSerializer struct{ runtime.Serializer }

// Decode decodes data into into when into is a *metav1.WatchEvent, and
// with the wrapped serializer otherwise.
func (s watchEventSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	ev, ok := into.(*metav1.WatchEvent)
	if !ok {
		return s.Serializer.Decode(data, defaults, into)
	}
	if err := decodeWatchEvent(data, ev); err != nil {
		return nil, nil, err
	}
	return ev, nil, nil
}

// decodeWatchEvent reads the watch event data encodes into ev: its type,
// and a copy of its object's bytes, since data is the stream's buffer,
// which the next event overwrites. It reads them as client-go's
// serializer does (sigs.k8s.io/json, names matched exactly): a member
// given twice is read from the last, but that a null leaves the value
// read before it, and a type that is neither a string nor null is
// refused. It fails on JSON encoding/json would refuse.
//
// It reads nothing else of the envelope, where client-go's serializer
// first reads a kind and an apiVersion, ignoring case, and refuses an
// event whose kind or apiVersion is neither a string nor null: such an
// envelope, which the API server never sends, is read here, as its type
// and object say.
func decodeWatchEvent(data []byte, ev *metav1.WatchEvent) error {
	s := scanner{data: data}
	err := s.object(0, func(m member) error {
		v := data[m.valueStart:m.valueEnd]
		if string(v) == "null" {
			// As encoding/json decodes a null into a string, and
			// runtime.RawExtension's UnmarshalJSON reads it.
			return nil
		}
		switch {
		case m.key(data, "type"):
			if v[0] != '"' {
				return s.fail("the event's type is not a string")
			}
			ev.Type = text(v)
		case m.key(data, "object"):
			ev.Object.Raw = append(ev.Object.Raw[:0:0], v...)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !s.atEnd() {
		return s.fail("data after the event")
	}
	return nil
}
