package kube_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/loam-dev/loam/kube"
)

// unreachable is a transport that fails the test on any request: a call
// with a mistake sends nothing.
type unreachable struct{ t *testing.T }

func (u unreachable) RoundTrip(req *http.Request) (*http.Response, error) {
	u.t.Errorf("sent %s %s", req.Method, req.URL)
	return nil, http.ErrHandlerTimeout
}

type poolObject = kube.Object[PoolSpec, PoolStatus]

func TestResourceClient_a_call_with_a_mistake_sends_nothing_and_names_them_all(t *testing.T) {
	pools, err := kube.NewResourceClient(Pool, &rest.Config{Host: "https://api.test", Transport: unreachable{t}})
	require.NoError(t, err)
	ctx := t.Context()
	read := poolObject{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "42"}}

	tests := []struct {
		name string
		call func() error
		want []string
	}{
		{
			name: "a list of a namespace that would name another path",
			call: func() error { _, err := pools.List(ctx, "..", nil); return err },
			want: []string{`kube: list of Pool.pools.example.com in the namespace "..": the namespace ".." is no path segment`},
		},
		{
			name: "a list of a namespace with a slash",
			call: func() error { _, err := pools.List(ctx, "shop/pools", nil); return err },
			want: []string{`the namespace "shop/pools" is no path segment`},
		},
		{
			name: "an update without a resourceVersion, in a namespace that is no path segment",
			call: func() error {
				_, err := pools.Update(ctx, poolObject{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "."}})
				return err
			},
			want: []string{`the namespace "." is no path segment`, "the object has no resourceVersion, which the API server requires to update a custom resource"},
		},
		{
			name: "an update of the status without a resourceVersion",
			call: func() error {
				_, err := pools.UpdateStatus(ctx, poolObject{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}})
				return err
			},
			want: []string{`kube: update of the status of Pool.pools.example.com "shop/web": the object has no resourceVersion`},
		},
		{
			name: "a create of an object read, in a namespace that is no path segment",
			call: func() error {
				o := read
				o.Namespace = "a/b"
				_, err := pools.Create(ctx, o)
				return err
			},
			want: []string{`the namespace "a/b" is no path segment`, `the object has the resourceVersion "42", which the API server refuses on a create`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}
