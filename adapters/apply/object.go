package apply

import (
	"bytes"
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
// *apierrors.StatusError; an answer cut short, an error naming the
// object.
//
// doc is sent as it is: it is the caller's to leave out the fields it
// doesn't mean to own, and the uid, so that the apply may create the
// object.
func (w *Writer) ApplyObject(ctx context.Context, key ports.Key, doc []byte) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, fmt.Errorf("the object %.40q is not JSON", doc)
	}
	// Through send's Stream, as every apply of the Writer's: Do would
	// decode a refusal the same way, but it also works out, for client-go's
	// request metrics, the request's URL twice more, with its query, a
	// third of the allocations of the whole apply.
	answer, err := w.send(ctx, key, doc, true, "")
	if err != nil {
		return nil, err
	}
	buf := answers.Get().(*bytes.Buffer)
	defer answers.Put(buf)
	buf.Reset()
	_, err = buf.ReadFrom(answer)
	_ = answer.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the answer to the apply of %s: %w", key, err)
	}
	return bytes.Clone(buf.Bytes()), nil
}
