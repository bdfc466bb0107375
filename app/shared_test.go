package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

func TestSetup_Share_keeps_values_in_order(t *testing.T) {
	var s app.Setup
	require.Empty(t, s.Shared(), "a Setup that kept none")
	s.Share("a")
	s.Share(nil)
	s.Share(2)
	got := s.Shared()
	require.Equal(t, []any{"a", 2}, got, "in order, nil left out")
	got[0] = "changed"
	require.Equal(t, []any{"a", 2}, s.Shared(), "a copy")
	var none *app.Setup
	require.Empty(t, none.Shared())
}
