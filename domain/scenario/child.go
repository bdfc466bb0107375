package scenario

import (
	"encoding/json/jsontext"
	json "encoding/json/v2"

	"k8s.io/apimachinery/pkg/types"
)

// AnnotateChild returns doc, the JSON object a server-side apply sends,
// with metadata.annotations[annotation] set to value — replacing any value
// it held and keeping every other annotation and field — when doc is a
// child of the object with owner: when the first of its owner references
// with controller: true has that UID. The result is JSON with the names of
// each object it rewrote in sorted order; numbers and strings are kept as
// they were written.
//
// It returns false, and doc is to be sent as it is, for an object that
// isn't owner's child, and for a doc it can't read: one that isn't a JSON
// object, has a name twice or invalid UTF-8, or whose metadata, owner
// references or annotations (an object of strings) have the wrong shape.
// The API server then judges the body itself.
func AnnotateChild(doc []byte, owner types.UID, annotation, value string) ([]byte, bool) {
	var obj map[string]jsontext.Value
	if err := json.Unmarshal(doc, &obj); err != nil || obj == nil {
		return nil, false
	}
	var meta map[string]jsontext.Value
	if err := json.Unmarshal(obj["metadata"], &meta); err != nil || meta == nil {
		return nil, false
	}
	if !controlledBy(meta, owner) {
		return nil, false
	}

	var annotations map[string]string
	if raw, ok := meta["annotations"]; ok {
		if err := json.Unmarshal(raw, &annotations); err != nil {
			return nil, false
		}
	}
	if annotations == nil {
		annotations = make(map[string]string, 1)
	}
	annotations[annotation] = value
	var err error
	if meta["annotations"], err = json.Marshal(annotations, json.Deterministic(true)); err != nil {
		return nil, false
	}
	if obj["metadata"], err = json.Marshal(meta, json.Deterministic(true)); err != nil {
		return nil, false
	}
	out, err := json.Marshal(obj, json.Deterministic(true))
	if err != nil {
		return nil, false
	}
	return out, true
}

// controlledBy reports whether the owner references in meta, an object's
// metadata, name owner as the object's controller. It is false when they
// are missing or of the wrong shape.
func controlledBy(meta map[string]jsontext.Value, owner types.UID) bool {
	raw, ok := meta["ownerReferences"]
	if !ok {
		return false
	}
	var refs []struct {
		UID        types.UID `json:"uid"`
		Controller *bool     `json:"controller"`
	}
	if err := json.Unmarshal(raw, &refs); err != nil {
		return false
	}
	for _, ref := range refs {
		if ref.Controller != nil && *ref.Controller {
			// The API server allows one controller reference per object,
			// so the first is the only one to look at.
			return ref.UID == owner
		}
	}
	return false
}
