package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
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
