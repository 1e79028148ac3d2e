package analysis

import (
	"fmt"
	"strings"
)

// A SCHED_DEADLINE task's windows (issue 38 item 1). Its jobs are released
// by the kernel's replenishment, not by a wakeup: from its release to its
// first switch-in it is runnable though no event says so (dl-release, and
// dl-response before the job first ran). What keeps it off its CPU is the
// EDF order, not a priority: a DEADLINE task with an earlier absolute
// deadline, or the fair server (dl_server, Linux 6.12+), a DEADLINE
// reservation that runs SCHED_OTHER tasks (50 ms a second by default).

// PolicyDeadline is Subject.Policy of a SCHED_DEADLINE task.
const PolicyDeadline = "DEADLINE"

// isDeadlineJob tells a window of a DEADLINE task's job.
func isDeadlineJob(s Subject) bool {
	return s.Policy == PolicyDeadline && strings.HasPrefix(s.Metric, "dl-")
}

// deadlineStates makes the unknown start of a job's window runnable: the
// window opens at its release, when the kernel queued it.
func deadlineStates(segs []taskSeg, s Subject) {
	if !isDeadlineJob(s) {
		return
	}
	for i := range segs {
		switch segs[i].st {
		case stUnknown:
			segs[i].st = stRunnable
		case stRunning:
			return
		}
	}
}

// deadlineNoSample ends the verdict of a SCHED_OTHER task that kept a
// DEADLINE task off its CPU, with no stack sample to tell where it ran.
const deadlineNoSample = "no stack sample: either that, or the fair server (dl_server, Linux 6.12+), " +
	"a DEADLINE reservation that runs SCHED_OTHER tasks up to 50 ms a second, had the earlier deadline"

// deadlineBlocking explains thread top.Thread keeping a DEADLINE task off
// its CPU (ok false when the task is not DEADLINE, or t is boosted: the
// generic verdicts say it).
func deadlineBlocking(res *Result, s Subject, top *Item, share string) bool {
	t := top.Thread
	if s.Policy != PolicyDeadline || t == nil || t.BoostedFrom != "" || t.Monitor {
		return false
	}
	switch {
	case t.KPrio == -1 || strings.HasPrefix(t.Sched, PolicyDeadline):
		res.Cause = CauseInterference
		res.Verdict = fmt.Sprintf("earlier deadline: the DEADLINE task %s ran %s on CPU %d before this one (EDF: "+
			"the earliest absolute deadline runs first; not noise). If this job missed its deadline, the reservations "+
			"on this CPU do not fit: shorten one's runtime, lengthen a period, or pin them apart", who(t), share, top.CPU)
	case t.KPrio >= 100 && t.Sampled && t.UserSpace:
		// In user space it was preemptible: only the fair server's
		// earlier deadline kept it there (without a sample, a
		// non-preemptible section is as likely: the generic verdict).
		res.Cause = CauseBlocking
		res.Verdict = fmt.Sprintf("fair server: the SCHED_OTHER task %s ran %s on CPU %d while this DEADLINE task was "+
			"runnable: the fair server (dl_server), a DEADLINE reservation for SCHED_OTHER tasks, had the earlier "+
			"deadline. Keep SCHED_OTHER work off this CPU, or lower its runtime "+
			"(/sys/kernel/debug/sched/fair_server/cpu%d/runtime)", who(t), share, top.CPU, top.CPU)
	case t.KPrio < 100:
		res.Cause = CauseInterference
		res.Verdict = fmt.Sprintf("%s ran %s on CPU %d while this DEADLINE task was runnable: a %s task above "+
			"SCHED_DEADLINE only when boosted or of the stop class (migration/N)", who(t), share, top.CPU, t.Sched)
	default:
		return false
	}
	return true
}

// deadlinePeriodVerdict explains a DEADLINE task's release spacing beyond
// its period. Its window holds its throttled time after a yield or an
// overrun, which the trace shows as runnable (switched out in state R):
// the window's breakdown cannot say who delayed the release, its jobs'
// windows (dl-release, dl-response) can.
func deadlinePeriodVerdict(res *Result, s Subject) {
	res.Cause = CauseRelease
	ratio := float64(res.ValueNs) / float64(s.NominalPeriod)
	res.Verdict = fmt.Sprintf("late release: this DEADLINE job came %s after the previous one, %.2f of its %s period. "+
		"The kernel releases a job at the replenishment after the previous one's end (sched_yield or throttling): "+
		"a job that ended past its period boundary, or waited for its CPU, delays the next release, and one that "+
		"overran its runtime (enforced at the scheduler tick) pays the excess back in skipped periods; its "+
		"dl-release, dl-exec and dl-response worst cases say why", us(res.ValueNs), ratio, us(s.NominalPeriod))
}
