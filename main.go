// rtscope: a real-time health scope for Linux. See README.md.
package main

import (
	"os"
	"strings"
	"syscall"

	"github.com/rtscope/rtscope/internal/cli"
)

func main() {
	// Go's asynchronous preemption sends signals to goroutines that run for
	// long; rtscope's real-time threads (scenarios, timerlat) must never get
	// them. The setting is read at start-up only, hence the re-exec.
	if !strings.Contains(os.Getenv("GODEBUG"), "asyncpreemptoff=1") {
		env := append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
		if g := os.Getenv("GODEBUG"); g != "" {
			env = append(os.Environ(), "GODEBUG="+g+",asyncpreemptoff=1")
		}
		if exe, err := os.Executable(); err == nil {
			_ = syscall.Exec(exe, os.Args, env) // returns only on failure: run as is
		}
	}
	os.Exit(cli.Main(os.Args[1:]))
}
