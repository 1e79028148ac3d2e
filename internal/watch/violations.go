package watch

import (
	"io"
	"time"

	"github.com/rtscope/rtscope/internal/action"
	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/report"
	"github.com/rtscope/rtscope/internal/trace"
)

// violations is the SLO side of a watch: each task's and metric's cause
// histogram of the violations explained, the explanation budget, and the
// on-threshold actions (actions.go). Session goroutine only, but the
// actions, which run on their own goroutine.
type violations struct {
	byTask map[uint64]map[metric.ID]*report.Violations
	// this second's explanation budget (ViolationBudget)
	budgetStart time.Time
	budgetUsed  int
	// On-threshold actions: done is non-nil while they run (one run at a
	// time); crossings noticed meanwhile are counted, not acted on.
	onThreshold action.List
	log         io.Writer
	done        chan struct{}
	fired       uint64
	skipped     uint64
	stop        bool // they ran without continue: watching stops
}

func newViolations(onThreshold action.List, log io.Writer) *violations {
	return &violations{byTask: map[uint64]map[metric.ID]*report.Violations{}, onThreshold: onThreshold, log: log}
}

// explained is one SLO violation with its window and what the analysis said.
type explained struct {
	n  engine.Notice
	t  *report.Task
	tr *trace.Trace
	e  report.Explanation
}

// admit returns the cause histogram of task id's violations of m, and
// whether this violation may be explained within the second's budget
// (ViolationBudget); one that may not is counted as not analysed.
func (v *violations) admit(id uint64, m metric.ID, now time.Time) (*report.Violations, bool) {
	if now.Sub(v.budgetStart) >= time.Second {
		v.budgetStart, v.budgetUsed = now, 0
	}
	if v.byTask[id] == nil {
		v.byTask[id] = map[metric.ID]*report.Violations{}
	}
	h := v.byTask[id][m]
	if h == nil {
		h = &report.Violations{}
		v.byTask[id][m] = h
	}
	if v.budgetUsed >= ViolationBudget {
		h.Skip(report.NotAnalysedBudget, 1)
		return h, false
	}
	v.budgetUsed++
	return h, true
}

// causes returns the cause histogram of a metric's SLO violations, or nil
// without an SLO or violations; analysed: the violations could be
// explained (flight recorder and analysis on).
func (v *violations) causes(id uint64, m metric.ID, rm *report.Metric, analysed bool) *report.Violations {
	if rm.Violations == nil || *rm.Violations == 0 {
		return nil
	}
	h := v.byTask[id][m]
	if h == nil {
		h = &report.Violations{}
	}
	if !analysed {
		c := *h
		c.Skip(report.NotAnalysedNoTrace, *rm.Violations-h.Analysed)
		h = &c
	}
	return h.Finish(*rm.Violations)
}

// forget drops task id's histograms (in its report now, or dropped).
func (v *violations) forget(id uint64) { delete(v.byTask, id) }

// actionsDone tells whether on-threshold actions that ran without
// continue are done, so that watching stops; it does not wait.
func (v *violations) actionsDone() bool {
	if v.done == nil {
		return false
	}
	select {
	case <-v.done:
		v.done = nil
		return v.stop
	default:
		return false
	}
}

// waitActions waits for the on-threshold actions still running.
func (v *violations) waitActions() {
	if v.done != nil {
		<-v.done
		v.done = nil
	}
}

// explainViolations explains the window of each SLO violation noticed,
// within the budget, into its task's and metric's cause histogram. It
// returns those explained, in order.
func (s *watcher) explainViolations(snap *trace.Snapshot, viols []engine.Notice) []*explained {
	if s.o.Explain == nil || len(viols) == 0 {
		return nil
	}
	var done []*explained
	now := time.Now()
	for _, n := range viols {
		m := metric.ID(n.Metric)
		h, ok := s.viol.admit(n.Id, m, now)
		if !ok {
			comm := ""
			if t := s.book.tasks[n.Id]; t != nil {
				comm = t.Comm
			}
			s.obs.Violation(n.Id, comm, m, "", report.NotAnalysedBudget)
			continue
		}
		s.win.follow(false)
		t := s.book.identify(s.eng, n.Id, n.Tid)
		tr := s.win.cut(snap, n).Decode(s.names)
		tr.Monitor = s.house.threads()
		e := s.o.Explain(t, m, tr)
		h.Add(e, n.Value, tr)
		s.house.monitor.AddViolation(e)
		s.obs.Violation(n.Id, t.Comm, m, e.Cause, "")
		if s.wobs != nil {
			s.wobs.Window(false, t, m, n.Value, func() (*trace.Trace, report.Explanation) { return tr, e })
		}
		done = append(done, &explained{n: n, t: t, tr: tr, e: e})
	}
	return done
}

// threshold starts the on-threshold actions for this poll's violations of
// judged tasks (violations.threshold).
func (s *watcher) threshold(viols []engine.Notice, done []*explained) {
	mine, first := judgedOnly(viols, done, func(n engine.Notice) bool {
		return s.book.judged(s.book.identify(s.eng, n.Id, n.Tid))
	})
	if len(mine) == 0 {
		return
	}
	task := func(id uint64) *report.Task {
		st, err := s.eng.Stats(id)
		if err != nil {
			return nil
		}
		return report.FromStats(st)
	}
	s.viol.threshold(mine, first, task, s.eng.Tracing() && s.o.Explain != nil)
}

// judgedOnly returns the violations of judged tasks (judged, asked once a
// task) and the first of them explained: those of hidden tasks are neither
// acted on nor counted by the actions, as the report does not count them.
func judgedOnly(viols []engine.Notice, done []*explained, judged func(engine.Notice) bool) ([]engine.Notice, *explained) {
	is := map[uint64]bool{}
	var mine []engine.Notice
	for _, n := range viols {
		ok, seen := is[n.Id]
		if !seen {
			ok = judged(n)
			is[n.Id] = ok
		}
		if ok {
			mine = append(mine, n)
		}
	}
	for _, x := range done {
		if is[x.n.Id] {
			return mine, x
		}
	}
	return mine, nil
}
