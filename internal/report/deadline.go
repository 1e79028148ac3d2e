package report

import (
	"fmt"
	"strings"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/units"
)

// Deadline is a SCHED_DEADLINE task's reservation and jobs (issue 38 item
// 1): absent (null) for a task that never ran a DEADLINE job.
type Deadline struct {
	// RuntimeNs, DeadlineNs and PeriodNs are its parameters
	// (sched_attr's sched_runtime, sched_deadline, sched_period) at its
	// last job.
	RuntimeNs  uint64 `json:"runtime_ns"`
	DeadlineNs uint64 `json:"deadline_ns"`
	PeriodNs   uint64 `json:"period_ns"`
	// Jobs counts its jobs that ended: by a sleep, by sched_yield()
	// (Yields), or throttled at the end of their runtime (Overruns).
	Jobs     uint64 `json:"jobs"`
	Yields   uint64 `json:"yields"`
	Overruns uint64 `json:"overruns"`
	// Misses counts the jobs that ended after their absolute deadline.
	Misses uint64 `json:"misses"`
	// LatenessMaxNs is the largest (end - absolute deadline) of its jobs:
	// negative when every job ended early (by that much at least).
	LatenessMaxNs int64 `json:"lateness_max_ns"`
}

// deadlineOf is the Deadline of s, nil when it ran no DEADLINE job.
func deadlineOf(s *engine.TaskStats) *Deadline {
	d := s.Dl
	if d.Jobs == 0 && d.Period == 0 {
		return nil
	}
	return &Deadline{RuntimeNs: d.Runtime, DeadlineNs: d.Deadline, PeriodNs: d.Period, Jobs: d.Jobs,
		Yields: d.Yields, Overruns: d.Overruns, Misses: d.Misses, LatenessMaxNs: d.LatenessMax}
}

// Params says its reservation: "runtime 1500.0 us, deadline 5000.0 us, period 5000.0 us".
func (d *Deadline) Params() string {
	return fmt.Sprintf("runtime %s us, deadline %s us, period %s us", units.Us(d.RuntimeNs), units.Us(d.DeadlineNs),
		units.Us(d.PeriodNs))
}

// lateness says how late (or early) its latest job ended.
func (d *Deadline) lateness() string {
	if d.LatenessMaxNs > 0 {
		return fmt.Sprintf("the latest %s us late", units.Us(uint64(d.LatenessMaxNs)))
	}
	return fmt.Sprintf("every job ended %s us before its deadline or earlier", units.Us(uint64(-d.LatenessMaxNs)))
}

// judgeDeadline judges a DEADLINE task by its jobs (ok false for another
// task): a missed deadline or a runtime overrun fails it.
func judgeDeadline(t *Task) (Health, string, bool) {
	d := t.Deadline
	if d == nil || d.Jobs == 0 {
		return "", "", false
	}
	var bad []string
	if d.Misses > 0 {
		bad = append(bad, fmt.Sprintf("missed its deadline in %d of %d jobs (%s)", d.Misses, d.Jobs, d.lateness()))
	}
	if d.Overruns > 0 {
		why := fmt.Sprintf("overran its %s us runtime in %d of %d jobs: throttled before they ended, "+
			"they need more runtime (or less work)", units.Us(d.RuntimeNs), d.Overruns, d.Jobs)
		// The kernel enforces the runtime at its scheduler tick (unless
		// HRTICK_DL): a spinning 1.5 ms job ran 2.6 ms (median), 4.6 ms
		// at worst (HZ 250), and the excess is paid back in periods skipped.
		// The median, not the worst: a vCPU stall inside one run makes
		// a long one (8.2 ms, its steal in it) without any tick's help.
		if m := t.Metrics[metric.DLExec.String()]; m != nil && m.P50Ns != nil && *m.P50Ns > d.RuntimeNs*5/4 {
			why += fmt.Sprintf(" (its median job ran %s us: runtime is enforced at the scheduler tick, and the "+
				"excess is taken back in skipped periods)", units.Us(*m.P50Ns))
		}
		bad = append(bad, why)
	}
	if len(bad) > 0 {
		return HealthFail, strings.Join(bad, "; "), true
	}
	return HealthOK, fmt.Sprintf("kept its deadlines in %d jobs (%s)", d.Jobs, d.lateness()), true
}

// deadlineHeadline is a DEADLINE task's worst job against its deadline,
// with its reservation.
func deadlineHeadline(t *Task) (string, bool) {
	d := t.Deadline
	m := t.Metrics[metric.DLResponse.String()]
	if d == nil || m == nil || m.Count == 0 || m.MaxNs == nil || d.DeadlineNs == 0 {
		return "", false
	}
	return fmt.Sprintf("worst %s %s us, %s of its deadline (%s)", metric.DLResponse, units.Us(*m.MaxNs),
		fraction(*m.MaxNs, d.DeadlineNs), d.Params()), true
}
