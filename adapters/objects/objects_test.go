package objects_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/adapters/objects"
	"github.com/loam-dev/loam/ports"
)

// recorder answers every request with its body, or a 404 Status for a
// path ending in "missing", and keeps each request's method, URL and body.
type recorder struct{ seen []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	r.seen = append(r.seen, req.Method+" "+req.URL.RequestURI()+" "+string(body))
	if strings.HasSuffix(req.URL.Path, "/missing") {
		return &http.Response{StatusCode: http.StatusNotFound, Header: http.Header{"Content-Type": {"application/json"}}, Request: req,
			Body: io.NopCloser(strings.NewReader(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found"}`))}, nil
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{"ok":true}`))}, nil
}

func TestClient_sends_each_operation_to_its_path(t *testing.T) {
	rt := &recorder{}
	cfg := &rest.Config{Host: "https://api.test", Transport: rt}
	ctx := t.Context()
	c, err := objects.New(cfg, schema.GroupVersionResource{Group: "cache.example.com", Version: "v1", Resource: "memcacheds"})
	require.NoError(t, err)
	core, err := objects.New(cfg, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	require.NoError(t, err)

	_, err = c.Create(ctx, "shop", []byte(`{"a":1}`))
	require.NoError(t, err)
	_, err = c.Get(ctx, ports.Key{Namespace: "shop", Name: "m"})
	require.NoError(t, err)
	_, err = c.Update(ctx, ports.Key{Namespace: "shop", Name: "m"}, []byte(`{"b":2}`), false)
	require.NoError(t, err)
	_, err = c.Update(ctx, ports.Key{Namespace: "shop", Name: "m"}, []byte(`{"c":3}`), true)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, ports.Key{Namespace: "shop", Name: "m"}, metav1.DeleteOptions{}))
	_, err = c.List(ctx, "", metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	_, err = core.Get(ctx, ports.Key{Name: "default"})
	require.NoError(t, err)
	_, err = c.Get(ctx, ports.Key{Namespace: "shop", Name: "missing"})
	require.True(t, apierrors.IsNotFound(err), "%v", err)

	require.Equal(t, []string{
		`POST /apis/cache.example.com/v1/namespaces/shop/memcacheds {"a":1}`,
		`GET /apis/cache.example.com/v1/namespaces/shop/memcacheds/m `,
		`PUT /apis/cache.example.com/v1/namespaces/shop/memcacheds/m {"b":2}`,
		`PUT /apis/cache.example.com/v1/namespaces/shop/memcacheds/m/status {"c":3}`,
		`DELETE /apis/cache.example.com/v1/namespaces/shop/memcacheds/m {}`,
		`GET /apis/cache.example.com/v1/memcacheds?labelSelector=app%3Dweb `,
		`GET /api/v1/namespaces/default `,
		`GET /apis/cache.example.com/v1/namespaces/shop/memcacheds/missing `,
	}, rt.seen)
}

func TestNew_reports_every_mistake(t *testing.T) {
	_, err := objects.New(nil, schema.GroupVersionResource{Group: "g"})
	require.ErrorContains(t, err, "the rest.Config is nil")
	require.ErrorContains(t, err, "has no Version or no Resource")
}
