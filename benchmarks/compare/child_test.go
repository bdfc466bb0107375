package compare

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTail_keeps_the_end_of_a_child_s_stderr(t *testing.T) {
	var tl tail
	require.Empty(t, tl.report(), "a child that wrote nothing adds nothing to an error")
	_, _ = tl.Write([]byte(strings.Repeat("a", tailSize)))
	_, _ = tl.Write([]byte("the end\n"))
	r := tl.report()
	require.True(t, strings.HasSuffix(r, "the end"), r)
	require.Len(t, r, len("\nThe end of its stderr:\n")+tailSize-1, "at most tailSize bytes, trimmed")
}
