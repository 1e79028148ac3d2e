package scenario

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/workload"
)

// Scenarios of SCHED_DEADLINE tasks (issue 38 item 1): a job per period,
// ended by sched_yield(), the kernel's replenishment releasing the next.

// schedDeadline is SCHED_DEADLINE (include/uapi/linux/sched.h).
const schedDeadline = 6

// deadlineBuiltins is the catalogue of the DEADLINE scenarios.
var deadlineBuiltins = []*Scenario{
	{
		Name:    "healthy-deadline",
		Summary: "a SCHED_DEADLINE task whose jobs fit their runtime: the DEADLINE baseline",
		Description: "A SCHED_DEADLINE task ('dljob', runtime 1.5 ms, deadline and period 5 ms) does 0.5 ms of work " +
			"(CPU time) in each job and ends it with sched_yield(): the kernel throttles it until its next period, " +
			"and its replenishment releases the next job. rtscope counts a job a period, none late, none overran.",
		threads: []string{"dljob"},
		Params: []Param{
			dur("period", "its period (and relative deadline)", 5*ms, 1*ms, 1000*ms),
			dur("runtime", "its runtime a period", 1500*us, 100*us, 900*ms),
			dur("work", "work per job", 500*us, 1*us, 900*ms),
		},
		check: deadlineFits(false),
		run:   runDeadline,
	},
	{
		Name:    "deadline-overrun",
		Summary: "a SCHED_DEADLINE task one of whose jobs in 4 needs more than its runtime",
		Description: "A SCHED_DEADLINE task ('dljob', runtime 1.5 ms, deadline and period 5 ms) does 0.5 ms of work " +
			"in each job, and 2 ms in every 4th, then yields. A 2 ms job runs out of its 1.5 ms runtime: the kernel " +
			"throttles it (a runtime overrun) and it ends in the next period. rtscope counts one overrun a heavy job " +
			"and fails the task.",
		threads: []string{"dljob"},
		Params: []Param{
			dur("period", "its period (and relative deadline)", 5*ms, 1*ms, 1000*ms),
			dur("runtime", "its runtime a period", 1500*us, 100*us, 900*ms),
			dur("work", "work per job", 500*us, 1*us, 900*ms),
			dur("heavy-work", "work of every 4th job", 2*ms, 1*us, 900*ms),
		},
		check: deadlineFits(true),
		run:   runDeadline,
	},
}

func init() {
	for _, s := range deadlineBuiltins {
		register(s)
	}
}

// deadlineFits checks the reservation: runtime < period, and a job's work
// within its runtime (heavy: the heavy job's beyond it).
func deadlineFits(heavy bool) func(Values) error {
	return func(v Values) error {
		switch {
		case v["runtime"] >= v["period"]:
			return fmt.Errorf("--runtime %s must be shorter than --period %s", Us(v["runtime"]), Us(v["period"]))
		case v["work"] >= v["runtime"]:
			return fmt.Errorf("--work %s must be shorter than --runtime %s", Us(v["work"]), Us(v["runtime"]))
		case heavy && v["heavy-work"] <= v["runtime"]:
			return fmt.Errorf("--heavy-work %s must be longer than --runtime %s", Us(v["heavy-work"]), Us(v["runtime"]))
		}
		return nil
	}
}

// setDeadline makes the calling thread SCHED_DEADLINE. The kernel takes
// it only with the whole root domain's CPUs as affinity: the thread is
// unpinned first.
func setDeadline(budget, period time.Duration) error {
	var all unix.CPUSet
	for c := range runtime.NumCPU() {
		all.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &all); err != nil {
		return fmt.Errorf("unpinning the DEADLINE thread: %w", err)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: schedDeadline, Runtime: uint64(budget),
		Deadline: uint64(period), Period: uint64(period)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("sched_setattr SCHED_DEADLINE runtime %v period %v: %w", budget, period, err)
	}
	return nil
}

// runDeadline runs the DEADLINE task: each job works, then yields; every
// 4th job does heavy-work when the scenario has it.
func runDeadline(e *env) error {
	work, heavy := e.v.D("work"), e.v.D("heavy-work")
	var jobs, heavies atomic.Int64
	e.after = append(e.after, func() {
		e.res.Counts["jobs"], e.res.Counts["heavy jobs"] = jobs.Load(), heavies.Load()
	})
	failed := make(chan error, 1)
	_, err := e.g.Go(workload.Spec{Name: "dljob", CPU: -1, Policy: workload.Other}, func(t *workload.Thread) {
		if err := setDeadline(e.v.D("runtime"), e.v.D("period")); err != nil {
			failed <- err
			return
		}
		every := int64(0)
		if heavy > 0 {
			every = 4
		}
		n, h := t.YieldJobs(work, heavy, every)
		jobs.Store(n)
		heavies.Store(h)
	})
	if err != nil {
		return err
	}
	select {
	case err := <-failed:
		return err
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}
