package watch

import (
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/sched"
)

// noiseWindows says which tasks' noise maxima get a window: a real-time or
// DEADLINE task's, or any that violates an SLO. A SCHED_OTHER task's
// interruptions are its time sharing: 300 short-lived `true` tasks under
// --all cut 300 noise windows, 233 of them then dropped as exited windows
// beyond the keeper's bound. The policy is read once a task (a syscall),
// in user space: the same test in BPF made the verifier walk 19k more
// instructions. Used by the session goroutine only.
type noiseWindows map[uint64]bool

// wants tells whether new-maximum notice n gets its window.
func (nw noiseWindows) wants(n engine.Notice) bool {
	if metric.ID(n.Metric) != metric.Noise || n.Flags&engine.NoticeFlagSLOViolated != 0 {
		return true
	}
	rt, ok := nw[n.Id]
	if !ok {
		attr, err := unix.SchedGetAttr(int(n.Tid), 0)
		rt = err == nil && sched.IsRT(attr.Policy) // gone already: a short-lived task
		nw[n.Id] = rt
	}
	return rt
}

// forget drops an exited task.
func (nw noiseWindows) forget(id uint64) { delete(nw, id) }

// noteNoiseWindow says why a task's noise maximum has no window when its
// policy was never real-time (noiseWindows.wants).
func noteNoiseWindow(t *report.Task) {
	rm := t.Metrics[metric.Noise.String()]
	if rm == nil || rm.MaxNs == nil || rm.Worst != nil || rm.WorstNote != "" {
		return
	}
	switch t.Policy {
	case "FIFO", "RR", "DEADLINE":
		return
	}
	rm.WorstNote = "no window: a SCHED_OTHER task's interruptions are its time sharing; noise windows are cut for " +
		"real-time and DEADLINE tasks, and for samples over a noise SLO"
}
