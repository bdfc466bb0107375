package app

import (
	"context"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Main runs an App as the OS process and exits the process with the App's
// exit code: Run on the real machine (OSHost) and the OS process, with the
// real environment, the arguments after the program's name, the real
// stdout and stderr, and SIGTERM and SIGINT as its Signals. It never
// returns. A WithHost in opts replaces the real machine, and a WithProcess
// the OS process: Main then listens for no signal.
//
// Main is the only code in loam that reads the real environment, listens
// for signals, or exits the process.
func Main(init Init, opts ...Option) {
	os.Exit(runOS(init, opts))
}

// runOS runs the App as Main does, and returns its exit code.
func runOS(init Init, opts []Option) int {
	front := []Option{WithHost(OSHost())}
	if cfg, _ := newRunConfig(opts); cfg.process == nil {
		signals := make(chan os.Signal, 2)
		signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
		defer signal.Stop(signals)
		var args []string
		if len(os.Args) > 1 {
			args = os.Args[1:]
		}
		front = append(front, WithProcess(Process{
			Environment: osEnvironment{},
			Args:        args,
			Stdout:      os.Stdout,
			Stderr:      os.Stderr,
			Signals:     signals,
		}))
	}
	return Run(context.Background(), init, append(front, opts...)...)
}

// OSHost returns the real machine: its network through net.Dialer and
// net.ListenConfig, and its files through os.Open.
func OSHost() Host {
	return Host{Network: osNetwork{}, FS: osFS{}}
}

// osNetwork is the real network.
type osNetwork struct{}

func (osNetwork) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func (osNetwork) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, network, address)
}

// osFS is the real file system, by OS paths.
type osFS struct{}

func (osFS) Open(name string) (fs.File, error) {
	f, err := os.Open(name)
	if err != nil {
		// A nil *os.File in a non-nil fs.File would not compare to nil.
		return nil, err
	}
	return f, nil
}

// osEnvironment is the real process's environment.
type osEnvironment struct{}

func (osEnvironment) LookupEnv(name string) (string, bool) { return os.LookupEnv(name) }

// Names returns the name of every variable of the real environment.
func (osEnvironment) Names() []string {
	vars := os.Environ()
	names := make([]string, 0, len(vars))
	for _, kv := range vars {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	return names
}
