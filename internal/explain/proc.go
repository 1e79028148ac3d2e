package explain

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

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
						out[HygieneMemNotLocked] = 1
					} else {
						out[HygieneMemNotLocked] = 0
					}
				}
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)); err == nil {
		if f, ok := statFields(string(b)); ok && len(f) > 9 {
			// Fields after "(comm) ": state(3) ... minflt(10) cminflt(11) majflt(12).
			if v, err := strconv.ParseUint(f[9], 10, 64); err == nil {
				out[HygieneMajorFaults] = v
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
