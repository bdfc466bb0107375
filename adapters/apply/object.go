package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/loam-dev/loam/ports"
)

// ApplyObject applies doc, the JSON of an object holding only the fields
// the apply sets, to the object key, creating it if there is none, and
// forcing conflicts: a controller's apply of an object it controls wins
// the fields it declares from every other field manager. It returns the
// API server's answer, the JSON of the whole object as it stored it; a
// refusal is the Status the API server sent, as an
// *apierrors.StatusError.
//
// doc is sent as it is: it is the caller's to leave out the fields it
// doesn't mean to own, and the uid, so that the apply may create the
// object.
func (w *Writer) ApplyObject(ctx context.Context, key ports.Key, doc []byte) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, fmt.Errorf("the object %.40q is not JSON", doc)
	}
	req, err := w.request(key, doc, true, "")
	if err != nil {
		return nil, err
	}
	res := req.Do(ctx)
	// Error, not Raw's error, which is the generic one: Error decodes the
	// Status the API server sent, as client-go's typed clients do.
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}
