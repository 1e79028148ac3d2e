// Command vmkit is the QEMU test bed's helper inside the guest: a static
// binary (amd64 and arm64) that reads values out of rtscope's JSON for the
// busybox test scripts, and runs small real-time workloads where the guest
// has no cyclictest (arm64).
//
//	vmkit get FILE PATH              print the value at PATH (see jsonpath.go)
//	vmkit periodic [flags]           periodic SCHED_FIFO sleeper, prints its own max latency
//	vmkit spin [flags]               busy loop, optionally SCHED_FIFO
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: vmkit get FILE PATH | periodic [flags] | spin [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "get":
		err = cmdGet(os.Args[2:])
	case "periodic":
		err = cmdPeriodic(os.Args[2:])
	case "spin":
		err = cmdSpin(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vmkit %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
