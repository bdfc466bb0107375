package apptest

import (
	"bytes"
	"maps"
	"slices"
	"sync"

	"github.com/loam-dev/loam/app"
)

// Env is a Process's environment held in a map: an app.Environment a test
// fills with exactly the variables it means, so nothing of the real
// environment leaks in. A variable set to "" is set, and empty.
type Env map[string]string

var _ app.EnvironmentLister = Env(nil)

// LookupEnv returns the variable's value and whether it is set.
func (e Env) LookupEnv(name string) (string, bool) {
	v, ok := e[name]
	return v, ok
}

// Names returns the name of every variable e holds, sorted.
func (e Env) Names() []string { return slices.Sorted(maps.Keys(e)) }

// output is a standard stream a test reads while the App writes it.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
