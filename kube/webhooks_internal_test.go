package kube

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A Webhooks NewWebhooks didn't make names itself as it always did, with
// no address, rather than panicking in an error's text.
func TestWebhooks_String_of_a_zero_Webhooks(t *testing.T) {
	require.Equal(t, "kube webhooks ()", (&Webhooks{}).String())
}
