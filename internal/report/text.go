package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/rtscope/rtscope/internal/metric"
	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

func us(p *uint64) string {
	if p == nil {
		return units.Unset
	}
	return units.Us(*p)
}

func usf(p *float64) string {
	if p == nil {
		return units.Unset
	}
	return units.UsF(*p)
}

// Live writes the periodic table: a row per task, the maximum of each
// metric that any of them measured so far, and its SLO violations (the
// final report has the percentiles). A row a task keeps it a screen at a
// dozen tasks, where a row a metric took eight.
func Live(w io.Writer, tasks []*Task, elapsed string) {
	fmt.Fprintf(w, "rtscope watch: %d task(s), %s elapsed, max in us\n", len(tasks), elapsed)
	cols := measured(tasks)
	fmt.Fprintf(w, "%7s %-15s %-13s", "TID", "COMM", "SCHED")
	for _, id := range cols {
		fmt.Fprintf(w, " %9s", id.Info().Title)
	}
	fmt.Fprintf(w, " %6s\n", "VIOL")
	for _, t := range tasks {
		fmt.Fprintf(w, "%7d %-15s %-13s", t.TID, t.Comm, t.Sched)
		for _, id := range cols {
			v := units.Unset
			if m := t.Metrics[id.String()]; m != nil && m.Count > 0 {
				v = us(m.MaxNs)
			}
			fmt.Fprintf(w, " %9s", v)
		}
		viol := units.Unset
		if slo(t) {
			viol = fmt.Sprint(violations(t))
		}
		fmt.Fprintf(w, " %6s\n", viol)
	}
}

// measured lists the metrics that any of the tasks has samples of.
func measured(tasks []*Task) []metric.ID {
	var cols []metric.ID
	for _, id := range metric.All() {
		for _, t := range tasks {
			if m := t.Metrics[id.String()]; m != nil && m.Count > 0 {
				cols = append(cols, id)
				break
			}
		}
	}
	return cols
}

// slo tells whether t has an SLO on any metric.
func slo(t *Task) bool {
	for _, m := range t.Metrics {
		if m.SLONs != nil {
			return true
		}
	}
	return false
}

// Final writes the full report of one task; withTraces adds the event listing of each worst case.
func Final(w io.Writer, t *Task, withTraces bool) {
	state := "running"
	if t.Exited {
		state = "exited"
	}
	fmt.Fprintf(w, "== tid %d %s (pid %d), %s, CPUs %s, %s\n", t.TID, t.Comm, t.PID, t.Sched, t.CPUs, state)
	if t.Health != "" {
		fmt.Fprintf(w, "   %s: %s; %s\n", strings.ToUpper(string(t.Health)), t.HealthReason, t.Headline)
	}
	if h := t.SchedHistory(); h != "" {
		fmt.Fprintf(w, "   %s\n", h)
	}
	if d := t.Deadline; d != nil {
		fmt.Fprintf(w, "   DEADLINE %s: %d jobs, %d ended by sched_yield, %d overran, %d missed (%s)\n",
			d.Params(), d.Jobs, d.Yields, d.Overruns, d.Misses, d.lateness())
	}
	writeMetricTable(w, t)
	c := t.Counters
	fmt.Fprintf(w, "   wakeups %d, voluntary switches %d, preemptions %d, timer releases %d, overruns %d",
		c.Wakeups, c.VoluntarySwitches, c.Preemptions, c.TimerReleases, c.Overruns)
	if c.Throttled > 0 {
		fmt.Fprintf(w, ", throttled %d", c.Throttled)
	}
	if t.NominalPeriodNs != nil {
		fmt.Fprintf(w, ", period %s us", units.Us(*t.NominalPeriodNs))
	}
	if s := t.Startup(); s != "" {
		fmt.Fprintf(w, ", %s", s)
	}
	fmt.Fprintln(w)
	var hy []string
	for _, n := range HygieneNames {
		if v := t.Hygiene[n]; v > 0 {
			hy = append(hy, fmt.Sprintf("%s %d", strings.ReplaceAll(n, "_", " "), v))
		}
	}
	if len(hy) > 0 {
		fmt.Fprintf(w, "   real-time hygiene: %s\n", strings.Join(hy, ", "))
	}
	writeNoiseByCause(w, t)
	writeTaskIPIs(w, t.IPIs)
	for _, id := range metric.All() {
		if m := t.Metrics[id.String()]; m != nil && m.ViolationCauses != nil && m.SLONs != nil {
			m.ViolationCauses.WriteText(w, id.String()+" SLO violations", *m.SLONs, "   ")
		}
	}
	writeWorst(w, t, withTraces)
}

// writeMetricTable writes a task's summary of each metric it has samples
// or an SLO for, one a line.
func writeMetricTable(w io.Writer, t *Task) {
	fmt.Fprintf(w, "   %-12s %8s %9s %9s %9s %9s %9s %9s %9s %9s %6s   (us; pNN ±12.5%%)\n",
		"metric", "count", "min", "avg", "p50", "p90", "p99", "p99.9", "max", "slo", "viol")
	any := false
	for _, id := range metric.All() {
		m := t.Metrics[id.String()]
		if m == nil || (m.Count == 0 && m.SLONs == nil) {
			continue
		}
		any = true
		viol := units.Unset
		if m.Violations != nil {
			viol = fmt.Sprint(*m.Violations)
		}
		fmt.Fprintf(w, "   %-12s %8d %9s %9s %9s %9s %9s %9s %9s %9s %6s\n", id.String(), m.Count,
			us(m.MinNs), usf(m.AvgNs), us(m.P50Ns), us(m.P90Ns), us(m.P99Ns), us(m.P999Ns), us(m.MaxNs),
			us(m.SLONs), viol)
	}
	if !any {
		fmt.Fprintf(w, "   no samples\n")
	}
}

// writeWorst writes each metric's worst case with its verdict; withTraces
// adds the analysis's breakdown and the event listing.
func writeWorst(w io.Writer, t *Task, withTraces bool) {
	for _, id := range metric.All() {
		m := t.Metrics[id.String()]
		if m != nil && m.WorstNote != "" {
			fmt.Fprintf(w, "   worst %s: %s\n", id.String(), m.WorstNote)
		}
		if m == nil || m.Worst == nil {
			continue
		}
		tr := m.Worst
		fmt.Fprintf(w, "   worst %s: %s us, %d events on CPU %s", id.String(), units.Us(tr.Value), len(tr.Events), cpus(tr.CPUs))
		if tr.Truncated {
			fmt.Fprintf(w, " [truncated: %s]", tr.Note)
		}
		fmt.Fprintln(w)
		if m.Verdict != "" {
			fmt.Fprintf(w, "     verdict: %s\n", m.Verdict)
		}
		if withTraces {
			// The analysis (internal/analysis) prints its own breakdown.
			if m.Analysis != nil {
				m.Analysis.WriteText(w, "     ")
			}
			b, _ := m.Analysis.(BoostNamer)
			WriteTraceNamed(w, tr, "     ", b)
		}
	}
}

func cpus(c []int) string {
	s := make([]string, len(c))
	for i, v := range c {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ",")
}

// WriteTrace lists the events of a window, times in us relative to its start.
func WriteTrace(w io.Writer, tr *trace.Trace, indent string) { WriteTraceNamed(w, tr, indent, nil) }

// BoostNamer is what an analysis may tell of a window's threads: the
// identity a thread ran with at kernel priority kprio when priority
// inheritance boosted it ("FIFO 10, boosted to 90 by task-H (PI)"), so
// that a listing never shows a boosted priority as the thread's own.
type BoostNamer interface {
	BoostedSched(tid uint32, kprio int) (string, bool)
}

// WriteTraceNamed is WriteTrace with the boosts b names (nil: none).
func WriteTraceNamed(w io.Writer, tr *trace.Trace, indent string, b BoostNamer) {
	for _, e := range tr.Events {
		fmt.Fprintf(w, "%s%+12s  cpu%-2d %s\n", indent, units.UsFine(e.T), e.CPU, DescribeNamed(e, b))
	}
}

// Describe renders one trace event on a line.
func Describe(e trace.Event) string { return DescribeNamed(e, nil) }

// DescribeNamed renders one trace event on a line, a thread boosted by
// priority inheritance named as b says (nil: as the event says).
func DescribeNamed(e trace.Event, b BoostNamer) string {
	boosted := func(tid uint32, comm, sch string, kprio int) string {
		if b != nil {
			if s, ok := b.BoostedSched(tid, kprio); ok {
				sch = s
			}
		}
		return taskLabel(tid, comm, sch)
	}
	switch e.Type {
	case trace.EventSwitch:
		how := "preempted"
		if !e.Preempted {
			how = "state " + e.PrevState
		}
		return fmt.Sprintf("switch   %s [%s] -> %s", boosted(e.PrevTID, e.PrevComm, e.PrevSched, e.PrevKPrio), how,
			boosted(e.NextTID, e.NextComm, e.NextSched, e.NextKPrio))
	case trace.EventWakeup:
		by := wakerLabel(e)
		if w := e.Waker; w != nil && w.Kind == trace.WakerTask {
			by = "by " + boosted(w.TID, w.Comm, w.Sched, w.KPrio)
		}
		return fmt.Sprintf("wakeup   %s %s, on CPU %d", boosted(e.TID, e.Comm, e.Sched, e.KPrio), by, deref(e.TargetCPU))
	case trace.EventMigrate:
		return fmt.Sprintf("migrate  %s CPU %d -> %d", taskLabel(e.TID, e.Comm, ""), deref(e.FromCPU), deref(e.ToCPU))
	case trace.EventIRQEntry, trace.EventIRQExit:
		return fmt.Sprintf("%-8s %d %s", eventWords(e), deref(e.IRQ), e.IRQName)
	case trace.EventSoftirqEntry, trace.EventSoftirqExit:
		return fmt.Sprintf("%s %s", eventWords(e), e.VecName)
	case trace.EventTimerEntry, trace.EventTimerExit:
		return describeTimer(e)
	case trace.EventSleep:
		return describeSleep(e)
	case trace.EventFaults:
		return fmt.Sprintf("faults   %s: %d minor, %d major page faults in its run", taskLabel(e.TID, e.Comm, ""), e.MinorFaults, e.MajorFaults)
	case trace.EventNoise:
		return describeNoise(e)
	case trace.EventNMI:
		return describeNMI(e)
	case trace.EventUserReturn:
		return fmt.Sprintf("return   %s to user space", taskLabel(e.TID, e.Comm, ""))
	case trace.EventTimerArm:
		return describeTimerArm(e)
	case trace.EventHandlerEntry, trace.EventHandlerExit:
		return fmt.Sprintf("%s %s IRQ %d", eventWords(e), taskLabel(e.TID, e.Comm, ""), deref(e.IRQ))
	case trace.EventExit:
		return fmt.Sprintf("exit     %s", taskLabel(e.TID, e.Comm, ""))
	case trace.EventIPISend, trace.EventIPIEntry, trace.EventIPIExit:
		return describeIPI(e)
	case trace.EventStack:
		where := "user space"
		if len(e.Stack) > 0 {
			where = strings.Join(e.Stack, " <- ")
		}
		return fmt.Sprintf("stack    %s runs while tid %d waits: %s", taskLabel(e.TID, e.Comm, ""), e.WaitingTID, where)
	}
	return e.Type.String()
}

// taskLabel names a task in an event line: comm/tid, with its scheduling
// when the event gives it (sch), or "idle" for tid 0.
func taskLabel(tid uint32, comm, sch string) string {
	if tid == 0 {
		return "idle"
	}
	if sch == "" {
		return fmt.Sprintf("%s/%d", comm, tid)
	}
	return fmt.Sprintf("%s/%d (%s)", comm, tid, sch)
}

// eventWords is the event type as words ("irq_entry" -> "irq entry").
func eventWords(e trace.Event) string { return strings.Replace(e.Type.String(), "_", " ", 1) }

// wakerLabel says who woke the task of a wakeup event ("by ..."), or "" when
// the event does not say.
func wakerLabel(e trace.Event) string {
	w := e.Waker
	if w == nil {
		return ""
	}
	switch w.Kind {
	case trace.WakerTask:
		return "by " + taskLabel(w.TID, w.Comm, w.Sched)
	case trace.WakerHardIRQ:
		return fmt.Sprintf("by hard IRQ %d %s", deref(w.IRQ), w.IRQName)
	case trace.WakerSoftIRQ:
		return "by softirq " + w.VecName
	case trace.WakerTimer:
		by := "by timer " + w.Function
		if e.ExpiryT != nil {
			by += fmt.Sprintf(" (expiry %s)", units.UsFine(*e.ExpiryT))
		}
		return by
	}
	return ""
}

// describeTimer renders a timer callback's entry or exit.
func describeTimer(e trace.Event) string {
	ctx := "softirq"
	if e.HardIRQ {
		ctx = "hard IRQ"
	}
	s := fmt.Sprintf("%s %s (%s)", eventWords(e), e.Function, ctx)
	if e.ExpiryT != nil {
		s += fmt.Sprintf(", expiry %s", units.UsFine(*e.ExpiryT))
	}
	return s
}

// describeSleep renders a task going to sleep: its state, why, where, and
// until when for a timed sleep.
func describeSleep(e trace.Event) string {
	s := fmt.Sprintf("sleep    %s %s: %s", taskLabel(e.TID, e.Comm, ""), e.State, e.Reason)
	if e.BlockedIn != "" {
		s += " in " + e.BlockedIn
	}
	if e.ExpiryT != nil {
		s += fmt.Sprintf(" until %s", units.UsFine(*e.ExpiryT))
	}
	return s
}

// describeTimerArm renders a task arming its timer, and a deadline it
// already missed.
func describeTimerArm(e trace.Event) string {
	s := fmt.Sprintf("arm      %s its timer", taskLabel(e.TID, e.Comm, ""))
	if e.ExpiryT != nil {
		s += fmt.Sprintf(" for %s", units.UsFine(*e.ExpiryT))
	}
	if e.Missed {
		s += ": already past, no sleep (missed deadline)"
	}
	return s
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
