package lockedbuffer_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/examples/internal/lockedbuffer"
)

// Writers and a reader at once: the race detector fails the test if the
// buffer isn't locked, and every write is kept whole.
func TestBuffer_keeps_concurrent_writes_whole(t *testing.T) {
	var b lockedbuffer.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = fmt.Fprintf(&b, "w%d;", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	s := b.String()
	for i := range 8 {
		require.Equal(t, 100, countOf(s, fmt.Sprintf("w%d;", i)))
	}
}

func countOf(s, sub string) int {
	n := 0
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			n++
		}
	}
	return n
}
