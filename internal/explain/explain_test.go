package explain

import (
	"testing"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/report"
)

// TestExplanation: the report counts the monitor's and the platform's
// windows from the flags Explanation sets, which report.Monitor and
// report.Steal count instead of comparing cause names of their own.
func TestExplanation(t *testing.T) {
	steal := uint64(7)
	for _, c := range []struct {
		cause             analysis.Cause
		monitor, platform bool
	}{
		{analysis.CauseMonitor, true, false},
		{analysis.CauseHypervisor, false, true},
		{analysis.CauseCPUUnavailable, false, true},
		{analysis.CauseIRQOff, false, false},
		{analysis.CauseInconclusive, false, false},
	} {
		r := &analysis.Result{Cause: c.cause, Verdict: "v", Culprit: "who", StealNs: &steal, MonitorNs: 3}
		e := Explanation(r)
		if e.Cause != c.cause.String() || e.ByMonitor != c.monitor || e.ByPlatform != c.platform ||
			e.Verdict != "v" || e.Culprit != "who" || e.StealNs != &steal || e.MonitorNs != 3 || e.Detail != report.Analysis(r) {
			t.Errorf("%s: %+v", c.cause, e)
		}
		var m report.Monitor
		var s report.Steal
		m.AddWorst(e)
		s.AddWorst(e)
		if (m.WorstCasesMonitor == 1) != c.monitor || (s.WorstCasesHypervisor == 1) != c.platform {
			t.Errorf("%s: counted as the monitor's %d, the platform's %d", c.cause, m.WorstCasesMonitor, s.WorstCasesHypervisor)
		}
	}
}

// TestSubjectOf: a report task's kernel priority, period and slack, and
// the kernel's preemption model read for the analysis.
func TestSubjectOf(t *testing.T) {
	prio, nice, period, slack := 80, -5, uint64(2_000_000), uint64(50_000)
	for _, c := range []struct {
		task  report.Task
		kprio int
	}{
		{report.Task{TID: 1, Policy: "FIFO", Priority: &prio}, 19},
		{report.Task{TID: 2, Policy: "OTHER", Nice: &nice}, 115},
		{report.Task{TID: 3, Policy: "DEADLINE"}, -1},
		{report.Task{TID: 4, Policy: "OTHER"}, 120},
	} {
		c.task.NominalPeriodNs, c.task.TimerSlackNs = &period, &slack
		s := SubjectOf(&c.task, "period")
		if s.KPrio != c.kprio || s.TID != c.task.TID || s.Metric != "period" || s.NominalPeriod != period ||
			s.TimerSlackNs != slack || s.Preemption != preempt.Detect() {
			t.Errorf("%+v: %+v, want kprio %d", c.task, s, c.kprio)
		}
	}
}
