package analysis

import (
	"fmt"

	"github.com/rtscope/rtscope/internal/trace"
)

// Faults are the page faults a task took in its runs that ended inside a
// window, from the engine's faults events (task_struct's counters read at
// each switch-out). Their time is not measured: the kernel has no
// page-fault exit tracepoint, and fentry may be refused; a major fault's
// I/O shows as a sleep ("page fault" or "I/O wait").
type Faults struct {
	Minor uint64 `json:"minor"`
	Major uint64 `json:"major"`
	Runs  int    `json:"runs"` // runs of the task with faults
}

// pageFaults sums the faults events of tid that end in [0, w]; nil for none.
func pageFaults(tr *trace.Trace, tid uint32, w int64) *Faults {
	var f Faults
	for _, e := range tr.Events {
		if e.Type == trace.EventFaults && e.TID == tid && e.T >= 0 && e.T <= w {
			f.Minor += uint64(e.MinorFaults)
			f.Major += uint64(e.MajorFaults)
			f.Runs++
		}
	}
	if f.Runs == 0 {
		return nil
	}
	return &f
}

// say puts the faults in the verdict: "1204 page faults during this run
// (1204 minor, 0 major; their time is not measured), memory not locked".
func (f *Faults) say(notLocked bool) string {
	n := f.Minor + f.Major
	where := "during this run"
	if f.Runs > 1 {
		where = fmt.Sprintf("during its %d runs in this window", f.Runs)
	}
	s := fmt.Sprintf("%d page fault%s %s (%d minor, %d major; their time is not measured)", n, plural(n), where, f.Minor, f.Major)
	if notLocked {
		s += ", memory not locked (no mlockall)"
	}
	return s
}

func plural(n uint64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
