package app_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Run starts a goroutine for init, each Serve, each Shutdown and each hook:
// none may outlive it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
