// Package proc reads what Linux's /proc tells of a process: its CPU time,
// its peak resident memory, and whether it still runs. The harness reads
// each controller's own figures from outside it, so that no figure
// depends on the controller measuring itself. Linux only.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of /proc/<pid>/stat's times: USER_HZ, which is 100
// on every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// CPU returns the user and system CPU time that the process pid has
// used, its own and not its children's (utime and stime of
// /proc/<pid>/stat), to the clock tick, 10 ms.
func CPU(pid int) (time.Duration, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	// After the command's closing parenthesis, field 3 (state) is f[0];
	// utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// Running reports whether the process pid runs: it exists and has not
// exited (a zombie, state Z, has).
func Running(pid int) bool {
	f, err := statFields(pid)
	return err == nil && len(f) > 0 && f[0] != "Z"
}

// PeakRSS returns the process pid's peak resident memory (VmHWM of
// /proc/<pid>/status) in bytes.
func PeakRSS(pid int) (uint64, error) {
	b, err := read(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/status: VmHWM: %w", pid, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
}

// SelfCPU returns the user and system CPU time this process has used,
// without its children's.
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// statFields returns the fields of /proc/<pid>/stat after the command,
// which is in parentheses and may hold spaces and parentheses itself.
func statFields(pid int) ([]string, error) {
	b, err := read(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("/proc/" + strconv.Itoa(pid) + "/stat: no command")
	}
	return strings.Fields(string(b[i+1:])), nil
}

func read(path string) ([]byte, error) {
	return os.ReadFile(path) //nolint:forbidigo // reading /proc is this package's one job; the harness is a program, not an App
}
