package analysis

import (
	"sync"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// Hygiene counters this package adds to report.Task.Hygiene.
const (
	HygieneFutexNoPI    = "futex_waits_without_pi" // seen in the task's worst-case windows
	HygieneMajorFaults  = "major_page_faults"      // /proc, while the task runs
	HygieneMemNotLocked = "memory_not_locked"      // /proc: VmLck 0 kB
)

// SubjectOf describes a report task for Explain.
func SubjectOf(t *report.Task, m string) Subject {
	s := Subject{TID: t.TID, Comm: t.Comm, Policy: t.Policy, Sched: t.Sched, Metric: m, KPrio: 120}
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
	return s
}

// ForWatch returns the watch.Options.Analyze hook: it explains each worst
// case once (a trace is analysed again only when a new maximum replaced it)
// and keeps the task's hygiene counters derived from traces and /proc.
func ForWatch() func(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation {
	type key struct {
		id uint64
		m  metric.ID
	}
	type cached struct {
		tr  *trace.Trace
		res *Result
	}
	var mu sync.Mutex
	results := map[key]cached{}
	futex := map[uint64]map[uint64]bool{} // task id -> timestamps of futex waits without PI
	procs := map[uint64]map[string]uint64{}
	return func(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation {
		mu.Lock()
		defer mu.Unlock()
		k := key{t.ID(), m}
		c, ok := results[k]
		if !ok || c.tr != tr {
			s := SubjectOf(t, m.String())
			c = cached{tr, Explain(tr, s)}
			results[k] = c
			if isRT(s) {
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
		if !t.Exited {
			if h := ProcHygiene(t.PID, t.TID); len(h) > 0 {
				procs[t.ID()] = h
			}
		}
		for n, v := range procs[t.ID()] {
			t.Hygiene[n] = v
		}
		return c.res.Explanation()
	}
}

// ForViolation explains the window of one SLO violation of t: pure, no
// hygiene side effects (the watch.Options.Explain hook).
func ForViolation(t *report.Task, m metric.ID, tr *trace.Trace) report.Explanation {
	return Explain(tr, SubjectOf(t, m.String())).Explanation()
}

// Explanation is the result as the report carries it.
func (r *Result) Explanation() report.Explanation {
	return report.Explanation{Verdict: r.Verdict, Cause: r.Cause.String(), Culprit: r.Culprit, StealNs: r.StealNs, MonitorNs: r.MonitorNs, Detail: r}
}
