package explore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/loam-dev/loam/kube"
	"github.com/loam-dev/loam/kubetest/explore"
)

// TestSettings checks what a replay's Controller needs: its namespace
// alone, its Lease there under a fixed identity, and a backoff capped at
// a second, so that the objects whose reconciles failed while the API
// server restarted are reconciled again soon after it is back.
func TestSettings(t *testing.T) {
	s := explore.Settings("memcached", "ns")
	want := kube.DefaultSettings()
	want.Name, want.Namespace = "memcached", "ns"
	want.LeaderElection.Namespace, want.LeaderElection.Identity = "ns", "explore"
	want.RetryMaxDelay = time.Second
	require.Equal(t, want, s)
}
