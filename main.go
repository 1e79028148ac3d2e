// rtscope: a real-time health scope for Linux. See README.md.
package main

import (
	"os"
	"syscall"

	"github.com/rtscope/rtscope/internal/cli"
	"github.com/rtscope/rtscope/internal/target"
)

func main() {
	// Go's asynchronous preemption sends signals to goroutines that run for
	// long; rtscope's real-time threads (scenarios, timerlat) must never get
	// them. The setting is read at start-up only, hence the re-exec, once:
	// target.ReexecMarker says it happened (and keeps the user's GODEBUG
	// for the commands rtscope launches).
	if env, ok := target.ReexecEnv(os.Environ()); ok {
		if exe, err := os.Executable(); err == nil {
			_ = syscall.Exec(exe, os.Args, env) // returns only on failure: run as is
		}
	}
	os.Exit(cli.Main(os.Args[1:]))
}
