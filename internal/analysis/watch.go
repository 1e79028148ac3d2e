package analysis

import (
	"sync"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// HygieneFutexNoPI is the hygiene counter this package adds to
// report.Task.Hygiene: futex waits without PI seen in the task's worst-case
// windows. Page faults and memory locking come from the engine.
const HygieneFutexNoPI = "futex_waits_without_pi"

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
	s.MemNotLocked = t.Hygiene[report.HygieneMemNotLocked] == 1
	return s
}

// ForWatch returns the watch.Options.Analyze hook: it explains each worst
// case once (a trace is analysed again only when a new maximum replaced it)
// and keeps the task's hygiene counters derived from traces.
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
					if e.Type == "sleep" && e.TID == t.TID && isFutexNoPI(e.Reason) {
						set[e.TS] = true
					}
				}
			}
		}
		if set, ok := futex[t.ID()]; ok {
			t.Hygiene[HygieneFutexNoPI] = uint64(len(set))
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
	return report.Explanation{Verdict: r.Verdict, Cause: r.Cause, Culprit: r.Culprit, StealNs: r.StealNs, MonitorNs: r.MonitorNs, Detail: r}
}

func isFutexNoPI(reason string) bool {
	return reason == "futex wait" || reason == "futex wait with timeout"
}
