package report

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// The invariants Check asserts (Problem.Invariant).
const (
	// InvNoOverrunTooLong: no "no overrun" verdict for an iteration longer
	// than 1.5 periods.
	InvNoOverrunTooLong = "no-overrun-beyond-period"
	// InvOverrunsIterations: overruns <= iterations.
	InvOverrunsIterations = "overruns-within-iterations"
	// InvBoostLabelled: a priority a task held only by a boost is labelled
	// as boosted where it appears.
	InvBoostLabelled = "boost-labelled"
	// InvWorstWindow: every metric's maximum has its window, or a note
	// says why not.
	InvWorstWindow = "worst-has-window"
	// InvFindingsRanked: findings are ranked by the time they cost.
	InvFindingsRanked = "findings-ranked"
	// InvCounterVerdict: a counter and a verdict about the same thing
	// agree (overruns, wakeups).
	InvCounterVerdict = "counter-agrees-with-verdict"
	// InvRuledOutAbsent: a cause a verdict rules out is absent from the
	// window's events.
	InvRuledOutAbsent = "ruled-out-absent"
)

// PendingElsewhere are the invariants whose violations on real runs come
// from outside the report layer, each with where its fix lies: tests of
// real runs log them instead of failing (the recorded fixtures list them
// one by one, testdata/check-known.txt). Delete an entry when its fix
// lands.
var PendingElsewhere = map[string]string{
	InvOverrunsIterations: "the BPF engine's overrun count (issue 36 item 4)",
	InvNoOverrunTooLong:   "the start-up iteration, not yet excluded (issue 36 item 4)",
	InvCounterVerdict:     "the BPF overrun count and the analysis' period verdicts (issue 36 item 4)",
	InvBoostLabelled:      "the analysis' verdicts, which name a boosted priority as the task's own",
	InvRuledOutAbsent:     "the analysis' ruled-out list",
}

// Problem is one violated invariant of a report: a bug of rtscope's, in
// the report layer or in what feeds it.
type Problem struct {
	Invariant string
	Task      string // comm/tid
	Metric    string // empty: the task's
	Detail    string
}

func (p Problem) String() string {
	where := p.Task
	if p.Metric != "" {
		where += " " + p.Metric
	}
	return fmt.Sprintf("%s: %s: %s", p.Invariant, where, p.Detail)
}

// Check asserts the report's invariants over every task and returns what
// it violates, nothing when it is consistent. It runs before a report is
// printed (TextOptions.Log: a warning, never a panic) and in every test
// that builds one.
func Check(r *Report) []Problem {
	var ps []Problem
	for _, t := range r.Tasks {
		ps = append(ps, checkTask(r, t)...)
	}
	return ps
}

// CheckSplit is Check's problems in two: those of the report layer (bugs
// to fail a test on) and those PendingElsewhere (to log until their fix
// lands), for tests of real runs.
func CheckSplit(r *Report) (bugs, pending []Problem) {
	for _, p := range Check(r) {
		if _, ok := PendingElsewhere[p.Invariant]; ok {
			pending = append(pending, p)
		} else {
			bugs = append(bugs, p)
		}
	}
	return bugs, pending
}

func checkTask(r *Report, t *Task) []Problem {
	var ps []Problem
	bad := func(inv, m, format string, a ...any) {
		ps = append(ps, Problem{Invariant: inv, Task: who(t), Metric: m, Detail: fmt.Sprintf(format, a...)})
	}
	if it := t.Metrics[metric.Iteration.String()]; it != nil && it.Count > 0 && t.Counters.Overruns > it.Count {
		bad(InvOverrunsIterations, "", "%d overruns in %d iterations", t.Counters.Overruns, it.Count)
	}
	for i := 1; i < len(t.Findings); i++ {
		a, b := t.Findings[i-1], t.Findings[i]
		if a.Cause != CauseHygiene && b.Cause != CauseHygiene && b.CostNs > a.CostNs {
			bad(InvFindingsRanked, "", "finding %d (%s, %s us) after one that cost less (%s us)", i+1, b.Cause,
				units.Us(b.CostNs), units.Us(a.CostNs))
		}
	}
	for _, id := range metric.All() {
		m := t.Metrics[id.String()]
		if m == nil {
			continue
		}
		name := id.String()
		if p := t.NominalPeriodNs; id == metric.Iteration && p != nil && m.MaxNs != nil &&
			strings.HasPrefix(m.Verdict, "no overrun") && *m.MaxNs*2 > *p*3 {
			bad(InvNoOverrunTooLong, name, "\"no overrun\" for an iteration of %s us, %.1f periods of %s us",
				units.Us(*m.MaxNs), float64(*m.MaxNs)/float64(*p), units.Us(*p))
		}
		if r.Features.Trace && m.Count > 0 && m.MaxNs != nil && m.Worst == nil && m.WorstNote == "" {
			bad(InvWorstWindow, name, "maximum %s us without its window or a note why", units.Us(*m.MaxNs))
		}
		for _, v := range verdicts(m) {
			if d := counterDisagrees(t, v); d != "" {
				bad(InvCounterVerdict, name, "%s", d)
			}
			for _, d := range unlabelledBoosts(r, v) {
				bad(InvBoostLabelled, name, "%s", d)
			}
		}
		if d := ruledOutPresent(t, m); d != "" {
			bad(InvRuledOutAbsent, name, "%s", d)
		}
	}
	return ps
}

// verdicts are the sentences of a metric: its worst case's and its
// violation examples'.
func verdicts(m *Metric) []string {
	var out []string
	if m.Verdict != "" {
		out = append(out, m.Verdict)
	}
	if v := m.ViolationCauses; v != nil {
		for _, c := range v.Causes {
			if c.Example != nil && c.Example.Verdict != "" {
				out = append(out, c.Example.Verdict)
			}
		}
	}
	return out
}

// overrunSaid matches a verdict that says an overrun happened ("an
// overrun", "overrun:"), not one that says none did.
var overrunSaid = regexp.MustCompile(`(^|[^o] )(an overrun|overrun:)`)

// counterDisagrees says how verdict v contradicts t's counters: an overrun
// named while none was counted, a wakeup while none was counted.
func counterDisagrees(t *Task, v string) string {
	if t.Counters.Overruns == 0 && overrunSaid.MatchString(v) && !strings.HasPrefix(v, "no overrun") {
		return fmt.Sprintf("the verdict names an overrun, the counters none: %.120s", v)
	}
	if t.Counters.Wakeups == 0 && (strings.Contains(v, "woken on time") || strings.Contains(v, "its wakeup came")) {
		return fmt.Sprintf("the verdict names a wakeup, the counters none: %.120s", v)
	}
	return ""
}

// named matches a task as verdicts name it: comm/tid (POLICY PRIO).
var named = regexp.MustCompile(`([^\s(]+)/(\d+) \(((?:FIFO|RR) \d+)\)`)

// unlabelledBoosts lists the tasks verdict v shows at a real-time priority
// they never held as their own (so held by a boost: priority inheritance)
// without saying "boosted".
func unlabelledBoosts(r *Report, v string) []string {
	var out []string
	for _, sm := range named.FindAllStringSubmatchIndex(v, -1) {
		tid, _ := strconv.ParseUint(v[sm[4]:sm[5]], 10, 32)
		sch := v[sm[6]:sm[7]]
		t := r.task(uint32(tid))
		if t == nil || t.Sched == sch || contains(t.SchedSeen, sch) {
			continue
		}
		if rest := v[sm[1]:]; strings.HasPrefix(rest, ", boosted") || strings.HasPrefix(rest, " boosted") {
			continue
		}
		out = append(out, fmt.Sprintf("%s shown as %s, a priority it held only by a boost, not labelled boosted", v[sm[2]:sm[5]], sch))
	}
	return out
}

func (r *Report) task(tid uint32) *Task {
	for _, t := range r.Tasks {
		if t.TID == tid {
			return t
		}
	}
	return nil
}

// ruledOutPresent says which cause the worst case's analysis rules out
// that its own window shows: a higher real-time priority running on the
// task's CPU while it waited to run.
func ruledOutPresent(t *Task, m *Metric) string {
	if m.Worst == nil || m.Analysis == nil {
		return ""
	}
	if !contains(factsOf(m.Analysis).RuledOut, "higher-priority threads") {
		return ""
	}
	own, ok := rtPrio(t.Sched)
	if !ok {
		own = -1
	}
	if e := higherWhileWaiting(m.Worst, t.TID, own); e != nil {
		return fmt.Sprintf("rules out higher-priority threads, but %s/%d (%s) ran on CPU %d at %s us while it waited",
			e.NextComm, e.NextTID, e.NextSched, e.CPU, units.UsFine(e.T))
	}
	return ""
}

// higherWhileWaiting finds a switch to a thread of a higher real-time
// priority than own on the CPU tid was woken on, between its wakeup and
// its switch-in.
func higherWhileWaiting(tr *trace.Trace, tid uint32, own int) *trace.Event {
	cpu := -1
	for i := range tr.Events {
		e := &tr.Events[i]
		switch {
		case e.Type == trace.EventWakeup && e.TID == tid && e.TargetCPU != nil:
			cpu = *e.TargetCPU
		case e.Type == trace.EventSwitch && e.NextTID == tid:
			cpu = -1
		case e.Type == trace.EventSwitch && e.CPU == cpu:
			if p, ok := rtPrio(e.NextSched); ok && p > own {
				return e
			}
		}
	}
	return nil
}

// rtPrio is the real-time priority of a "FIFO 80" or "RR 10".
func rtPrio(s string) (int, bool) {
	for _, p := range []string{"FIFO ", "RR "} {
		if strings.HasPrefix(s, p) {
			f := strings.Fields(s[len(p):])
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.Atoi(f[0])
			return n, err == nil
		}
	}
	return 0, false
}
