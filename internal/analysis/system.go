package analysis

import (
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	modelOnce sync.Once
	model     string
)

// PreemptionModel returns the kernel's preemption model: none, voluntary,
// full, lazy or rt; empty when it cannot be known (a PREEMPT_DYNAMIC kernel
// whose debugfs file cannot be read and whose command line does not say).
func PreemptionModel() string {
	modelOnce.Do(func() {
		var uts unix.Utsname
		_ = unix.Uname(&uts)
		version := unix.ByteSliceToString(uts.Version[:])
		dbg, _ := os.ReadFile("/sys/kernel/debug/sched/preempt")
		cmdline, _ := os.ReadFile("/proc/cmdline")
		model = parseModel(string(dbg), version, string(cmdline))
	})
	return model
}

// parseModel decides the model from the debugfs file ("none voluntary
// (full) lazy"), else uname -v, else the preempt= boot option.
func parseModel(dbg, version, cmdline string) string {
	if i, j := strings.Index(dbg, "("), strings.Index(dbg, ")"); i >= 0 && j > i {
		return dbg[i+1 : j]
	}
	switch {
	case strings.Contains(version, "PREEMPT_RT"):
		return "rt"
	case strings.Contains(version, "PREEMPT_DYNAMIC"):
		for _, f := range strings.Fields(cmdline) {
			if v, ok := strings.CutPrefix(f, "preempt="); ok {
				return v
			}
		}
		return "" // the build default is not visible
	case strings.Contains(version, "PREEMPT"):
		return "full"
	}
	return "" // none or voluntary: the build option does not show
}
