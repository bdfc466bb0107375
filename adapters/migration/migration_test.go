package migration

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/loam-dev/loam/ports"
)

// A write's error is the port's error the domain tells apart: only what
// the API server refused for the object alone is ErrRefused, never an
// RBAC 403 or a webhook that can't be reached, which every object meets.
func TestTranslateWrite_tells_a_refusal_from_a_failure(t *testing.T) {
	gr := schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}
	denial := func(code int32, message string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Message: message}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"422 Invalid", apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "Memcached"}, "m0", field.ErrorList{field.Invalid(field.NewPath("spec", "image"), "redis", "no")}), ports.ErrRefused},
		{"a webhook's denial", denial(403, `admission webhook "v.memcached" denied the request: spec.image: not allowed`), ports.ErrRefused},
		{"a webhook's denial with its own code", denial(400, `admission webhook "v.memcached" denied the request without explanation`), ports.ErrRefused},
		{"a policy's denial", denial(422, `ValidatingAdmissionPolicy 'images' with binding 'b' denied request: no`), ports.ErrRefused},
		{"409 Conflict", apierrors.NewConflict(gr, "m0", errors.New("changed")), ports.ErrConflict},
		{"404", apierrors.NewNotFound(gr, "m0"), ports.ErrGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, translateWrite(tc.err), tc.want)
		})
	}
	for _, err := range []error{
		apierrors.NewForbidden(gr, "m0", errors.New(`User "x" cannot update resource "memcacheds"`)),
		apierrors.NewInternalError(errors.New(`failed calling webhook "v.memcached": connection refused`)),
		errors.New("connection refused"),
	} {
		require.NotErrorIs(t, translateWrite(err), ports.ErrRefused, err.Error())
	}
}
