//go:build lintselftest

package lintselftest

import (
	_ "sigs.k8s.io/controller-runtime"            // want: depguard
	_ "sigs.k8s.io/controller-runtime/pkg/client" // want: depguard
)
