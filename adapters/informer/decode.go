package informer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// NewDynamicClient returns a dynamic client of cfg for the primary
// informer, whose watches decode each object straight from the bytes the
// API server sent into the cache's compact form. client-go's own decodes
// every watched object into maps of interface values, which the
// informer's transform then encodes again and drops: most of a
// controller's CPU at scale. Lists, and everything but a watch, decode as
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
	return dynamic.New(rc), nil
}

// compactSerializers is the dynamic client's serializers, but that its
// JSON decoder returns a *cached when asked for no type in particular,
// which is how client-go's watch decodes each event's object. Asked for a
// type, such as a list, it decodes as the dynamic client does.
type compactSerializers struct {
	runtime.NegotiatedSerializer
	infos []runtime.SerializerInfo
}

func newCompactSerializers(ns runtime.NegotiatedSerializer) compactSerializers {
	infos := append([]runtime.SerializerInfo(nil), ns.SupportedMediaTypes()...)
	for i := range infos {
		if infos[i].MediaType != runtime.ContentTypeJSON {
			continue
		}
		infos[i].Serializer = compactSerializer{infos[i].Serializer}
		if stream := infos[i].StreamSerializer; stream != nil {
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
// *cached, and everything else with the serializer it wraps.
type compactSerializer struct{ runtime.Serializer }

// Decode decodes data into a *cached when into is nil and data is an
// object the cache holds, and with the wrapped serializer otherwise: a
// Status, as a watch's error events carry, must decode as one for
// client-go to read the error in it.
func (s compactSerializer) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil {
		return s.Serializer.Decode(data, defaults, into)
	}
	c, err := decodeCompact(data)
	if errors.Is(err, errStatus) {
		return s.Serializer.Decode(data, defaults, into)
	}
	if err != nil {
		return nil, nil, err
	}
	return c, nil, nil
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
// which the next event overwrites. It fails on JSON encoding/json would
// refuse.
func decodeWatchEvent(data []byte, ev *metav1.WatchEvent) error {
	s := scanner{data: data}
	err := s.object(0, func(m member) error {
		v := data[m.valueStart:m.valueEnd]
		switch {
		case m.key(data, "type"):
			ev.Type = text(v)
		case m.key(data, "object"):
			if string(v) == "null" {
				ev.Object.Raw = nil
			} else {
				ev.Object.Raw = append(ev.Object.Raw[:0:0], v...)
			}
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

// errStatus is decodeCompact's answer for a Status, which isn't an object
// of the resource.
var errStatus = errors.New("the object is a Status")

// decodeCompact returns the object data encodes as the cache holds it: the
// JSON as sent, but for metadata.managedFields, and the metadata the
// informer and the domain read. It decodes only those fields, and fails
// on JSON encoding/json would refuse, and on a document that isn't an
// object. A field of a type the API server never sends, such as a number
// for a name, reads as absent, as the dynamic client's accessors read it.
func decodeCompact(data []byte) (*cached, error) {
	s := scanner{data: data}
	c := &cached{}
	var metadata, status member
	var hasMetadata, hasStatus, isStatus bool
	err := s.object(0, func(m member) error {
		switch {
		case m.key(data, "metadata"):
			metadata, hasMetadata = m, true
		case m.key(data, "status"):
			status, hasStatus = m, true
		case m.key(data, "kind"):
			isStatus = string(data[m.valueStart:m.valueEnd]) == `"Status"`
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !s.atEnd() {
		return nil, s.fail("data after the object")
	}
	if isStatus {
		return nil, errStatus
	}

	// cut is the span of managedFields to leave out, with one comma
	// beside it; its start equals its end when there is none.
	var cut struct{ start, end int }
	if hasMetadata && data[metadata.valueStart] == '{' {
		ms := scanner{data: data, pos: metadata.valueStart}
		var prev, managed member
		var hasManaged, managedFirst bool
		err := ms.object(1, func(m member) error {
			if hasManaged && managedFirst && cut.end == 0 {
				// managedFields was the first member: it goes up to
				// this one's key, with the comma between.
				cut.start, cut.end = managed.keyStart, m.keyStart
			}
			if m.key(data, "managedFields") {
				managed, hasManaged = m, true
				managedFirst = prev == (member{})
				if !managedFirst {
					cut.start, cut.end = prev.valueEnd, m.valueEnd
				}
			} else {
				readMetadata(data, m, c)
			}
			prev = m
			return nil
		})
		if err != nil {
			return nil, err
		}
		if hasManaged && managedFirst && cut.end == 0 {
			cut.start, cut.end = managed.keyStart, managed.valueEnd
		}
	}

	end := len(bytes.TrimRight(data, " \t\r\n"))
	doc := make([]byte, 0, end-(cut.end-cut.start))
	doc = append(doc, data[:cut.start]...)
	doc = append(doc, data[cut.end:end]...)
	c.json = doc[:len(doc):len(doc)]
	if hasStatus && string(data[status.valueStart:status.valueEnd]) != "null" {
		start, stop := status.valueStart, status.valueEnd
		if start >= cut.end {
			start, stop = start-(cut.end-cut.start), stop-(cut.end-cut.start)
		}
		// Capped, so that appending to the status can't write into the
		// JSON.
		c.status = doc[start:stop:stop]
	}
	return c, nil
}

// readMetadata sets the field of c's ObjectMeta that m, a member of the
// object's metadata, holds, if the cache keeps it.
func readMetadata(data []byte, m member, c *cached) {
	v := data[m.valueStart:m.valueEnd]
	switch {
	case m.key(data, "name"):
		c.name = text(v)
	case m.key(data, "namespace"):
		c.namespace = text(v)
	case m.key(data, "uid"):
		c.uid = types.UID(text(v))
	case m.key(data, "resourceVersion"):
		c.resourceVersion = text(v)
	case m.key(data, "finalizers"):
		c.finalizers = nil
		if json.Unmarshal(v, &c.finalizers) != nil {
			c.finalizers = nil
		}
	case m.key(data, "annotations"):
		c.annotations = nil
		if json.Unmarshal(v, &c.annotations) != nil {
			c.annotations = nil
		}
	case m.key(data, "deletionTimestamp"):
		// Any deletionTimestamp means the object is being deleted, even
		// one that doesn't parse as a time.
		c.deleting = string(v) != "null"
	}
}

// text returns the string the JSON value v holds, or "" when v is not a
// string. A string with an escape or a byte that isn't UTF-8 is decoded
// by encoding/json, which replaces such bytes as the dynamic client's
// decoding does.
func text(v []byte) string {
	if len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		return string(v[1 : len(v)-1])
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}
