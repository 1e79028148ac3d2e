package watch

import (
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/sched"
)

// noiseWindows says which noise maxima get a window: a real-time or
// DEADLINE task's, or any over an SLO. A SCHED_OTHER task's interruptions
// are its time sharing: 300 short-lived `true` tasks under --all cut 300
// noise windows, 233 of them then dropped as exited windows beyond the
// keeper's bound. The policy is read at each such notice (a syscall; a
// task found real-time once is not asked again), in user space: the same
// test in BPF made the verifier walk 19k more instructions. Used by the
// session goroutine only.
type noiseWindows struct {
	rt       map[uint64]bool // found real-time or DEADLINE
	rejected map[uint64]bool // its latest noise maximum got no window
}

func newNoiseWindows() noiseWindows {
	return noiseWindows{rt: map[uint64]bool{}, rejected: map[uint64]bool{}}
}

// wants tells whether new-maximum notice n gets its window; recorded
// gives the policy the engine saw for a task that is gone.
func (nw noiseWindows) wants(n engine.Notice, recorded func(id uint64) (uint32, error)) bool {
	if metric.ID(n.Metric) != metric.Noise {
		return true
	}
	if n.Flags&engine.NoticeFlagSLOViolated != 0 || nw.rt[n.Id] {
		delete(nw.rejected, n.Id)
		return true
	}
	// A thread is created SCHED_OTHER and takes its policy after: asked
	// again at its next maximum until it is real-time.
	policy, err := uint32(0), error(nil)
	if attr, aerr := unix.SchedGetAttr(int(n.Tid), 0); aerr == nil {
		policy = attr.Policy
	} else {
		// Gone: a maximum recorded at its exit (oslat's FIFO 1 worker,
		// throttled 52 ms to its end, was judged SCHED_OTHER).
		policy, err = recorded(n.Id)
	}
	if err == nil && sched.IsRT(policy) {
		nw.rt[n.Id] = true
		delete(nw.rejected, n.Id)
		return true
	}
	nw.rejected[n.Id] = true
	return false
}

// forget drops task id.
func (nw noiseWindows) forget(id uint64) {
	delete(nw.rt, id)
	delete(nw.rejected, id)
}

// note says why t's noise maximum has no window when wants refused it.
func (nw noiseWindows) note(t *report.Task) {
	rm := t.Metrics[metric.Noise.String()]
	if !nw.rejected[t.ID()] || rm == nil || rm.MaxNs == nil || rm.Worst != nil || rm.WorstNote != "" {
		return
	}
	rm.WorstNote = "no window: the task was SCHED_OTHER when it reached this maximum, and a SCHED_OTHER task's " +
		"interruptions are its time sharing; noise windows are cut for real-time and DEADLINE tasks, and for samples over a noise SLO"
}
