package compare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// cpuProfile is a CPU profile of the harness's process over one run's
// window, or nothing when no directory was asked for.
type cpuProfile struct {
	path string
	buf  *bytes.Buffer
}

// startProfile starts a CPU profile that stop writes to dir/name.pprof,
// or does nothing when dir is empty.
func startProfile(dir, name string) (*cpuProfile, error) {
	if dir == "" {
		return &cpuProfile{}, nil
	}
	p := &cpuProfile{path: filepath.Join(dir, name+".pprof"), buf: new(bytes.Buffer)}
	if err := pprof.StartCPUProfile(p.buf); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	return p, nil
}

// stop stops the profile and writes it; later calls do nothing.
func (p *cpuProfile) stop() error {
	if p.buf == nil {
		return nil
	}
	pprof.StopCPUProfile()
	data := p.buf.Bytes()
	p.buf = nil
	if err := os.MkdirAll(filepath.Dir(p.path), 0o755); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	//nolint:forbidigo // writing the profile where -profile says is what it is for
	if err := os.WriteFile(p.path, data, 0o644); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	return nil
}
