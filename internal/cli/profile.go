package cli

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// CPUProfileEnv names the file that gets a CPU profile of the whole run
// (go tool pprof reads it): a debugging aid for rtscope's own CPU, not a
// flag. The profile is written when the command returns, which watch,
// serve, timerlat, demo, doctor and scenario do on SIGINT and SIGTERM
// (they stop as at the end of their duration); a process killed with
// SIGKILL writes none.
const CPUProfileEnv = "RTSCOPE_CPUPROFILE"

// startCPUProfile starts profiling into path ("": nothing) and returns
// what stops it and writes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CPUProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close() // failing anyway
		return nil, fmt.Errorf("%s: %w", CPUProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "rtscope: %s: %v\n", CPUProfileEnv, err)
		}
	}, nil
}

// MemProfileEnv names the file that gets a Go heap profile (live objects
// after a collection, and what was allocated) when the command returns,
// on SIGINT and SIGTERM too: the soak's agent RSS rose from 60 to 100 MB
// in 10 minutes (bench/results/2026-11-28-soak.md) and no profile said by
// what. "%p" in the name is the process id: rtscope ctl and the agent
// started by one soak inherit the same variable.
const MemProfileEnv = "RTSCOPE_MEMPROFILE"

// writeHeapProfile writes the heap profile to path ("": nothing), "%p"
// replaced by the process id.
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", MemProfileEnv, err)
	}
	runtime.GC() // the live objects of now, not of the last cycle
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close() // failing anyway
		return fmt.Errorf("%s: %w", MemProfileEnv, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", MemProfileEnv, err)
	}
	return nil
}

// MemProfileEveryEnv names an interval (a Go duration, "1m") at which the
// heap profile of MemProfileEnv is also written while the command runs,
// to FILE.1, FILE.2, ...: the profile at exit shows only what outlives
// the session (8.8 MB after a 4-minute soak), not what the session holds
// as it grows, and `go tool pprof -base FILE.2 FILE.8` names what grew
// between minutes 2 and 8. An interval rather than a signal or a pprof
// endpoint: the soak (or any unattended run) gets its series without a
// process to signal it, and the agent opens no listener for it.
const MemProfileEveryEnv = "RTSCOPE_MEMPROFILE_EVERY"

// startHeapProfiles writes the heap profile to path.1, path.2, ... every
// interval (given as text; path or interval "": nothing) until the
// returned function is called.
func startHeapProfiles(path, every string) (stop func(), err error) {
	if path == "" || every == "" {
		return func() {}, nil
	}
	d, err := time.ParseDuration(every)
	if err != nil || d <= 0 {
		return nil, fmt.Errorf("%s: %q is not a positive duration", MemProfileEveryEnv, every)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(d)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if err := writeHeapProfile(path + "." + strconv.Itoa(n)); err != nil {
				fmt.Fprintf(os.Stderr, "rtscope: %v\n", err)
			}
		}
	}()
	return func() { close(done); <-finished }, nil
}
