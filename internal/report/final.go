package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/rtscope/rtscope/internal/units"
)

// TextOptions say how much of a report WriteFinal writes.
type TextOptions struct {
	// Verbose adds each task's full tables and per-metric verdicts with
	// their evidence, and the notes on windows not kept; Traces adds the
	// worst cases' event listings (and implies Verbose).
	Verbose, Traces bool
	// LiveKeep and ExitedKeep are the windows each metric keeps of live and
	// exited tasks (the summary names them).
	LiveKeep, ExitedKeep int
	// Log receives the consistency check's problems (Check) as warnings;
	// nil: the report is not checked.
	Log io.Writer
}

// WriteFinal writes the end of a watch as text from r alone, the answer
// first: a headline per task with its judgement, the findings one per
// cause ranked by the time they cost, a compact table of each metric's
// worst case, then (Verbose) every task's report, and the summary. It is
// the renderer the output goldens freeze (golden_test.go). Tasks must be
// judged (Judge).
func WriteFinal(w io.Writer, r *Report, o TextOptions) {
	if o.Log != nil {
		if ps := Check(r); len(ps) > 0 {
			fmt.Fprintf(o.Log, "rtscope watch: warning: the report contradicts itself in %d place(s), a bug of rtscope's (--verbose lists them); the first: %.160s\n",
				len(ps), ps[0])
			if o.Verbose {
				for _, p := range ps[1:] {
					fmt.Fprintf(o.Log, "rtscope watch: warning: %s\n", p)
				}
			}
		}
	}
	order := HeadlineOrder(r.Tasks)
	fmt.Fprintln(w)
	WriteHeadlines(w, order)
	shown := order[:min(len(order), headlinesShown)]
	writeFindings(w, shown)
	writeWorstTable(w, shown)
	if o.Verbose || o.Traces {
		for _, t := range r.Tasks {
			Final(w, t, o.Traces)
		}
	}
	WriteSummary(w, r, o)
}

// headlinesShown bounds the lines of the headline: it must stay short
// with a thousand short-lived tasks (watch -- make).
const headlinesShown = 20

// HeadlineOrder is the tasks the worst first: those that fail or warn
// (by judgement, then SLO violations), then the real-time ones, then the
// rest; within each, by judgement, priority (highest first), else in
// report order.
func HeadlineOrder(tasks []*Task) []*Task {
	order := make([]*Task, len(tasks))
	copy(order, tasks)
	prio := func(t *Task) int {
		if t.Priority != nil {
			return *t.Priority
		}
		return -1
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		pa, pb := a.Health.Rank() >= HealthWarn.Rank(), b.Health.Rank() >= HealthWarn.Rank()
		switch {
		case pa != pb:
			return pa
		case pa && a.Health.Rank() != b.Health.Rank():
			return a.Health.Rank() > b.Health.Rank()
		case pa && violations(a) != violations(b):
			return violations(a) > violations(b)
		case ranRT(a) != ranRT(b):
			return ranRT(a)
		case a.Health.Rank() != b.Health.Rank():
			return a.Health.Rank() > b.Health.Rank()
		}
		return prio(a) > prio(b)
	})
	return order
}

// WriteHeadlines prints one line per task, the worst first (HeadlineOrder
// does not apply here: tasks are printed in the order given): its
// judgement, policy and priority, period, why, and its worst metric
// against its SLO or period. Beyond headlinesShown lines, the rest are
// counted by judgement.
func WriteHeadlines(w io.Writer, tasks []*Task) {
	fmt.Fprintf(w, "rtscope watch: %d task(s), the worst first\n", len(tasks))
	rest := map[Health]int{}
	for i, t := range tasks {
		if i >= headlinesShown {
			rest[t.Health]++
			continue
		}
		period := "no period"
		if t.NominalPeriodNs != nil {
			period = "period " + units.Us(*t.NominalPeriodNs) + " us"
		}
		why := t.HealthReason
		if t.Headline != why {
			why += "; " + t.Headline
		}
		sch, exit := mainSched(t)
		if exit != "" {
			why += "; " + exit
		}
		fmt.Fprintf(w, "  %-7s %-20s %-13s %-18s %s\n", strings.ToUpper(string(t.Health)), who(t), sch, period, why)
	}
	if len(rest) > 0 {
		var parts []string
		for _, h := range []Health{HealthFail, HealthWarn, HealthUnknown, HealthOK} {
			if rest[h] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", rest[h], h))
			}
		}
		fmt.Fprintf(w, "  and %d more: %s (--verbose prints every task; JSON has every judgement)\n",
			len(tasks)-headlinesShown, strings.Join(parts, ", "))
	}
}

// mainSched is the identity t held longest (its wall time, SchedTimes),
// and, when its last one differs, a phrase saying so: cyclictest ran
// FIFO 80 for 3 s and went back to OTHER to exit, and a headline of its
// last policy called it an OTHER task. Without times, its last identity.
func mainSched(t *Task) (string, string) {
	best := -1
	for i, st := range t.SchedTimes {
		if best < 0 || st.Ns > t.SchedTimes[best].Ns {
			best = i
		}
	}
	if best < 0 || t.SchedTimes[best].Sched == t.Sched {
		return t.Sched, ""
	}
	if t.Exited {
		return t.SchedTimes[best].Sched, t.Sched + " at exit"
	}
	return t.SchedTimes[best].Sched, t.Sched + " now"
}

func who(t *Task) string { return fmt.Sprintf("%s/%d", t.Comm, t.TID) }

// findingsShown bounds the findings printed per task (JSON has them all).
const findingsShown = 4

// writeFindings prints each task's findings, one line per cause, ranked by
// the time they cost it.
func writeFindings(w io.Writer, tasks []*Task) {
	header := false
	for _, t := range tasks {
		for i, f := range t.Findings {
			if !header {
				fmt.Fprintln(w, "findings, one per cause, the costliest first:")
				header = true
			}
			if i == findingsShown {
				fmt.Fprintf(w, "  %s: and %d more (JSON has them all)\n", who(t), len(t.Findings)-i)
				break
			}
			fmt.Fprintf(w, "  %s: %s\n", who(t), f.Line())
		}
	}
	if !header {
		fmt.Fprintln(w, "findings: none")
	}
}

// writeWorstTable prints the worst case (max) of each metric, a row a task,
// a column a metric that any of them measured.
func writeWorstTable(w io.Writer, tasks []*Task) {
	cols := measured(tasks)
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "worst case per metric, us (--verbose: counts, percentiles, verdicts)\n  %-20s", "TASK")
	for _, id := range cols {
		fmt.Fprintf(w, " %9s", id.Info().Title)
	}
	fmt.Fprintln(w)
	for _, t := range tasks {
		if samples(t) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %-20s", who(t))
		for _, id := range cols {
			v := units.Unset
			if m := t.Metrics[id.String()]; m != nil && m.Count > 0 {
				v = us(m.MaxNs)
			}
			fmt.Fprintf(w, " %9s", v)
		}
		fmt.Fprintln(w)
	}
}

// WriteSummary writes the closing lines of a watch: tasks reported, what was
// lost, the hypervisor's and rtscope's own share, the actions; with
// Verbose, the windows not kept.
func WriteSummary(w io.Writer, r *Report, o TextOptions) {
	l := r.Lost
	fmt.Fprintf(w, "rtscope watch: %d task(s) reported, %s; lost: %d notices, %d tasks not tracked, %d stacks, %d truncated traces, %d windows",
		len(r.Tasks), time.Duration(r.DurationNs).Round(time.Millisecond), l.Notices, l.TasksNotTracked, l.Stacks, l.TracesTruncated, l.WindowsLost)
	if l.EventsMissed > 0 {
		fmt.Fprintf(w, ", %d events missed (a BPF program already ran on their CPU)", l.EventsMissed)
	}
	if l.WakeupsUnseen > 0 {
		fmt.Fprintf(w, ", %d wakeups the kernel did not report (their cycles left out)", l.WakeupsUnseen)
	}
	fmt.Fprintln(w)
	writeHidden(w, r)
	if o.Verbose {
		writeWindowNotes(w, l, o)
	}
	if l.TrackingDeferred > 0 {
		fmt.Fprintf(w, "rtscope watch: %d task(s) tracked from their next switch-in: the kernel's task storage was busy when they appeared\n",
			l.TrackingDeferred)
	}
	WriteSteal(w, r.Steal, r.DurationNs)
	WriteThrottling(w, r)
	WriteMonitor(w, r.Monitor)
	if a := r.Actions; a != nil {
		fmt.Fprintf(w, "rtscope watch: on-threshold actions ran %d time(s); %d violation(s) came while they ran or after the stop\n",
			a.ThresholdFired, a.ThresholdSkipped)
	}
}

// writeWindowNotes says which windows the report holds in part or not at
// all (each metric's worst_note says it of its own).
func writeWindowNotes(w io.Writer, l Lost, o TextOptions) {
	if l.TracesSparse > 0 {
		fmt.Fprintf(w, "rtscope watch: %d sparse trace(s): windows longer than the flight recorder or --trace-max-events holds, with their task's own events across them and the others' near their end\n",
			l.TracesSparse)
	}
	if l.LiveWindowsNotKept > 0 {
		fmt.Fprintf(w, "rtscope watch: %d new maxima left without a window: while tasks run, each metric keeps the windows of its %d largest (statistics and verdicts are whole)\n",
			l.LiveWindowsNotKept, o.LiveKeep)
	}
	if l.ExitedWindowsDropped > 0 {
		fmt.Fprintf(w, "rtscope watch: %d window(s) of exited tasks dropped to bound memory: each metric keeps its %d largest (statistics and verdicts are whole)\n",
			l.ExitedWindowsDropped, o.ExitedKeep)
	}
}
