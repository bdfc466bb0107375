package app_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/app"
)

func TestReview_Share_concurrently_on_a_Setup_built_by_hand(t *testing.T) {
	var s app.Setup
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { s.Share(i) })
	}
	wg.Wait()
	require.Len(t, s.Shared(), 8)
}
