package analysis

import (
	"fmt"
	"os"
	"strconv"
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

// ProcHygiene reads what /proc says about a running thread's memory hygiene:
// memory_not_locked (1: its process has no locked memory, VmLck 0 kB) and
// major_page_faults (the thread's major faults since it started). A task
// that has exited gives nothing.
func ProcHygiene(pid, tid uint32) map[string]uint64 {
	out := map[string]uint64{}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "VmLck:"); ok {
				kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err == nil {
					if kb == 0 {
						out["memory_not_locked"] = 1
					} else {
						out["memory_not_locked"] = 0
					}
				}
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)); err == nil {
		if f, ok := statFields(string(b)); ok && len(f) > 9 {
			// Fields after "(comm) ": state(3) ... minflt(10) cminflt(11) majflt(12).
			if v, err := strconv.ParseUint(f[9], 10, 64); err == nil {
				out["major_page_faults"] = v
			}
		}
	}
	return out
}

// statFields splits /proc/.../stat after the comm, which may contain spaces:
// f[0] is the state (field 3).
func statFields(s string) ([]string, bool) {
	i := strings.LastIndex(s, ")")
	if i < 0 {
		return nil, false
	}
	return strings.Fields(s[i+1:]), true
}
