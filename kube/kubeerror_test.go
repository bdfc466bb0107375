package kube

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKubeError_prefixes_every_line_of_a_joined_error(t *testing.T) {
	events := errors.New("controller a: writing its last events: refused")
	err := kubeError(errors.Join(context.DeadlineExceeded, events))
	require.Equal(t, "kube: context deadline exceeded\nkube: controller a: writing its last events: refused", err.Error())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, events)
	require.Equal(t, "kube: x", kubeError(errors.New("x")).Error())
}
