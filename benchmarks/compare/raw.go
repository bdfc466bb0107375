package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/loam-dev/loam/benchmarks/memcached"
)

// rawClient makes the harness's own writes as plain HTTP requests on
// client-go's authenticated transport, and decodes no more of an answer
// than it needs: nothing of an apply's, and the uid and generation of a
// create's. So the harness's share of the process's CPU stays small, and
// the limit measures the API server rather than a client's decoding.
type rawClient struct {
	http *http.Client
	host string // https://host:port
}

// object is what the harness knows of an object it created: what a
// ConfigMap's owner reference and a status apply name.
type object struct {
	owner      memcached.Owner
	spec       memcached.Spec
	generation int64
}

// typeMeta is every Memcached's apiVersion and kind.
var typeMeta = metav1.TypeMeta{APIVersion: memcached.GroupVersion.String(), Kind: memcached.Kind}

// objectName names the i-th object of a run, and its ConfigMap.
func objectName(i int) string { return fmt.Sprintf("m%05d", i) }

// create creates the i-th Memcached of ns.
func (c rawClient) create(ctx context.Context, ns string, i int) (object, error) {
	name := objectName(i)
	spec := memcached.Spec{Size: int32(1 + i%3)}
	body, err := json.Marshal(memcached.Memcached{
		TypeMeta: typeMeta, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec,
	})
	if err != nil {
		return object{}, fmt.Errorf("encode Memcached %s/%s: %w", ns, name, err)
	}
	var created struct {
		Metadata struct {
			UID        types.UID `json:"uid"`
			Generation int64     `json:"generation"`
		} `json:"metadata"`
	}
	path := "/apis/" + memcached.GroupVersion.String() + "/namespaces/" + ns + "/" + memcached.Plural
	if err := c.do(ctx, http.MethodPost, path, "application/json", body, &created); err != nil {
		return object{}, fmt.Errorf("create Memcached %s/%s: %w", ns, name, err)
	}
	return object{
		owner:      memcached.Owner{Namespace: ns, Name: name, UID: created.Metadata.UID},
		spec:       spec,
		generation: created.Metadata.Generation,
	}, nil
}

// applyBoth makes the two writes a reconcile of o makes: a server-side
// apply of its ConfigMap, then of its status.
func (c rawClient) applyBoth(ctx context.Context, o object) error {
	ns, name := o.owner.Namespace, o.owner.Name
	cm, err := json.Marshal(memcached.ConfigMap(o.owner, o.spec))
	if err != nil {
		return fmt.Errorf("encode ConfigMap %s/%s: %w", ns, name, err)
	}
	if err := c.do(ctx, http.MethodPatch, "/api/v1/namespaces/"+ns+"/configmaps/"+name+applyQuery, applyPatch, cm, nil); err != nil {
		return fmt.Errorf("apply ConfigMap %s/%s: %w", ns, name, err)
	}
	status, err := json.Marshal(statusApply{
		TypeMeta: typeMeta,
		Metadata: statusApplyMeta{Namespace: ns, Name: name},
		Status:   memcached.Ready(memcached.Status{}, o.generation),
	})
	if err != nil {
		return fmt.Errorf("encode the status of %s/%s: %w", ns, name, err)
	}
	path := "/apis/" + memcached.GroupVersion.String() + "/namespaces/" + ns + "/" + memcached.Plural + "/" + name + "/status" + applyQuery
	if err := c.do(ctx, http.MethodPatch, path, applyPatch, status, nil); err != nil {
		return fmt.Errorf("apply the status of %s/%s: %w", ns, name, err)
	}
	return nil
}

// A server-side apply, as the controllers make it: their field manager,
// forcing conflicts.
const (
	applyPatch = "application/apply-patch+yaml"
	applyQuery = "?fieldManager=" + memcached.FieldManager + "&force=true"
)

// statusApply is the body of a status apply: the object's names and the
// status, nothing else.
type statusApply struct {
	metav1.TypeMeta
	Metadata statusApplyMeta  `json:"metadata"`
	Status   memcached.Status `json:"status"`
}

type statusApplyMeta struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// do sends one request and checks that it succeeded. It decodes the
// answer into into when into isn't nil, and otherwise reads it to the end
// and drops it, so the connection is reused.
func (c rawClient) do(ctx context.Context, method, path, contentType string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.host+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	if into != nil {
		return json.NewDecoder(resp.Body).Decode(into)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
