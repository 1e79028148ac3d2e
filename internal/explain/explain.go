// Package explain connects the analysis to the watch session and the
// report: it describes a report.Task as an analysis.Subject with the
// system facts the analysis needs (the preemption model, the idle exit
// bound, the throttling share), turns a result
// into the report.Explanation the report counts and prints, and keeps the
// hygiene counters derived from traces and /proc. The CLI injects its hooks
// into watch.Options; analysis stays pure (no /proc, no report).
package explain

import (
	"os"
	"sync"

	"github.com/rtscope/rtscope/internal/analysis"
	"github.com/rtscope/rtscope/internal/cpuidle"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/preempt"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/sched"
	"github.com/rtscope/rtscope/internal/trace"
)

// throttling is the machine's throttling configuration, read once: the
// share a throttling verdict names.
var throttling = sync.OnceValue(func() sched.Throttling { return sched.ReadThrottling(os.DirFS("/")) })

// HygieneFutexNoPI is the hygiene counter this package adds to
// report.Task.Hygiene: futex waits without PI seen in the task's worst-case
// windows. Page faults and memory locking come from the engine
// (report.HygieneMinorFaults, ...), alive or exited.
const HygieneFutexNoPI = "futex_waits_without_pi"

// SubjectOf describes a report task for analysis.Explain, with the running
// kernel's preemption model (preempt.Detect, read once), its CPUs' idle
// exit bound (cpuidle.Detect, read once) and the share throttling leaves
// SCHED_OTHER tasks on its last CPU (read once).
func SubjectOf(t *report.Task, m string) analysis.Subject {
	idle := cpuidle.Detect()
	s := analysis.Subject{TID: t.TID, Comm: t.Comm, Policy: t.Policy, Sched: t.Sched, Metric: m, KPrio: 120,
		Preemption: preempt.Detect(), IdleExitNs: idle.Ns, IdleExitWhy: idle.Why, SMICounter: idle.SMICounter}
	switch {
	case t.Policy == "DEADLINE":
		s.KPrio = -1
	case t.Priority != nil:
		s.KPrio = 99 - *t.Priority
	case t.Nice != nil:
		s.KPrio = 120 + *t.Nice
	}
	if t.NominalPeriodNs != nil {
		s.NominalPeriod = *t.NominalPeriodNs
	}
	if t.TimerSlackNs != nil {
		s.TimerSlackNs = *t.TimerSlackNs
	}
	s.FairServerRuntimeNs, s.FairServerPeriodNs = throttling().Share(int(t.LastCPU))
	s.MemNotLocked = t.Hygiene[report.HygieneMemNotLocked] == 1
	// As the judgement counts them (report.Judge): one relative sleep is
	// the start-up's; a tenth or more of its timer releases is its loop.
	rel := t.Hygiene["relative_timer_sleeps"]
	s.SleepsRelative = rel > 1 && rel*10 >= t.Counters.TimerReleases
	s.ArmsFromWakeup = !s.SleepsRelative && t.Counters.Overruns == 0 && t.Counters.TimerReleases >= 10
	return s
}

// ForWatch returns the watch.Options.Analyze hook: it explains each worst
// case once (a trace is analysed again only when a new maximum replaced it)
// and keeps the task's hygiene counters derived from traces. The
// hook is safe for concurrent use (one mutex).
func ForWatch() func(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation {
	type key struct {
		id uint64
		m  metric.ID
	}
	type cached struct {
		tr  *trace.Trace
		res *analysis.Result
	}
	var mu sync.Mutex
	results := map[key]cached{}
	futex := map[uint64]map[uint64]bool{} // task id -> timestamps of futex waits without PI
	return func(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation {
		mu.Lock()
		defer mu.Unlock()
		k := key{t.ID(), m}
		c, ok := results[k]
		if !ok || c.tr != tr {
			s := SubjectOf(t, m.String())
			c = cached{tr, analysis.Explain(tr, s)}
			results[k] = c
			if s.RT() {
				set := futex[t.ID()]
				if set == nil {
					set = map[uint64]bool{}
					futex[t.ID()] = set
				}
				for _, e := range tr.Events {
					if e.Type == trace.EventSleep && e.TID == t.TID && e.Reason.FutexWait() {
						set[e.TS] = true
					}
				}
			}
		}
		if set, ok := futex[t.ID()]; ok {
			t.Hygiene[HygieneFutexNoPI] = uint64(len(set))
		}
		return Explanation(c.res)
	}
}

// ForViolation explains the window of one SLO violation of t: no hygiene
// side effects (the watch.Options.Explain hook). Safe for concurrent use.
func ForViolation(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation {
	return Explanation(analysis.Explain(tr, SubjectOf(t, m.String())))
}

// Explanation is the result as the report carries it.
func Explanation(r *analysis.Result) report.Explanation {
	return report.Explanation{Verdict: r.Verdict, Cause: r.Cause.String(), Culprit: r.Culprit, StealNs: r.StealNs,
		MonitorNs: r.MonitorNs, ByMonitor: r.Cause == analysis.CauseMonitor, ByPlatform: r.Cause.Platform(), Detail: r}
}
