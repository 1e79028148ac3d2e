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

// Live writes the periodic table: one row per task and metric with samples.
func Live(w io.Writer, tasks []*Task, elapsed string) {
	fmt.Fprintf(w, "rtscope watch: %d task(s), %s elapsed, times in us\n", len(tasks), elapsed)
	fmt.Fprintf(w, "%7s %-15s %-14s %-12s %9s %9s %9s %9s %9s %6s\n",
		"TID", "COMM", "SCHED", "METRIC", "COUNT", "MIN", "AVG", "MAX", "P99", "VIOL")
	for _, t := range tasks {
		first := true
		for _, id := range metric.All() {
			m := t.Metrics[id.String()]
			if m == nil || m.Count == 0 {
				continue
			}
			tid, comm, sch := fmt.Sprint(t.TID), t.Comm, t.Sched
			if !first {
				tid, comm, sch = "", "", ""
			}
			first = false
			viol := units.Unset
			if m.Violations != nil {
				viol = fmt.Sprint(*m.Violations)
			}
			fmt.Fprintf(w, "%7s %-15s %-14s %-12s %9d %9s %9s %9s %9s %6s\n", tid, comm, sch, id.String(),
				m.Count, us(m.MinNs), usf(m.AvgNs), us(m.MaxNs), us(m.P99Ns), viol)
		}
		if first {
			fmt.Fprintf(w, "%7d %-15s %-14s (no samples yet)\n", t.TID, t.Comm, t.Sched)
		}
	}
}

// Final writes the full report of one task; withTraces adds the event listing of each worst case.
func Final(w io.Writer, t *Task, withTraces bool) {
	state := "running"
	if t.Exited {
		state = "exited"
	}
	fmt.Fprintf(w, "== tid %d %s (pid %d), %s, CPUs %s, %s\n", t.TID, t.Comm, t.PID, t.Sched, t.CPUs, state)
	if h := t.SchedHistory(); h != "" {
		fmt.Fprintf(w, "   %s\n", h)
	}
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
	c := t.Counters
	fmt.Fprintf(w, "   wakeups %d, voluntary switches %d, preemptions %d, timer releases %d, overruns %d",
		c.Wakeups, c.VoluntarySwitches, c.Preemptions, c.TimerReleases, c.Overruns)
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
	for _, id := range metric.All() {
		if m := t.Metrics[id.String()]; m != nil && m.ViolationCauses != nil && m.SLONs != nil {
			m.ViolationCauses.WriteText(w, id.String()+" SLO violations", *m.SLONs, "   ")
		}
	}
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
	task := func(tid uint32, comm, sch string, kprio ...int) string {
		if tid == 0 {
			return "idle"
		}
		if b != nil && len(kprio) == 1 {
			if s, ok := b.BoostedSched(tid, kprio[0]); ok {
				sch = s
			}
		}
		if sch == "" {
			return fmt.Sprintf("%s/%d", comm, tid)
		}
		return fmt.Sprintf("%s/%d (%s)", comm, tid, sch)
	}
	switch e.Type {
	case trace.EventSwitch:
		how := "preempted"
		if !e.Preempted {
			how = "state " + e.PrevState
		}
		return fmt.Sprintf("switch   %s [%s] -> %s", task(e.PrevTID, e.PrevComm, e.PrevSched, e.PrevKPrio), how,
			task(e.NextTID, e.NextComm, e.NextSched, e.NextKPrio))
	case trace.EventWakeup:
		by := ""
		if w := e.Waker; w != nil {
			switch w.Kind {
			case trace.WakerTask:
				by = "by " + task(w.TID, w.Comm, w.Sched, w.KPrio)
			case trace.WakerHardIRQ:
				by = fmt.Sprintf("by hard IRQ %d %s", deref(w.IRQ), w.IRQName)
			case trace.WakerSoftIRQ:
				by = "by softirq " + w.VecName
			case trace.WakerTimer:
				by = "by timer " + w.Function
				if e.ExpiryT != nil {
					by += fmt.Sprintf(" (expiry %s)", units.UsFine(*e.ExpiryT))
				}
			}
		}
		return fmt.Sprintf("wakeup   %s %s, on CPU %d", task(e.TID, e.Comm, e.Sched, e.KPrio), by, deref(e.TargetCPU))
	case trace.EventMigrate:
		return fmt.Sprintf("migrate  %s CPU %d -> %d", task(e.TID, e.Comm, ""), deref(e.FromCPU), deref(e.ToCPU))
	case trace.EventIRQEntry, trace.EventIRQExit:
		return fmt.Sprintf("%-8s %d %s", strings.Replace(e.Type.String(), "_", " ", 1), deref(e.IRQ), e.IRQName)
	case trace.EventSoftirqEntry, trace.EventSoftirqExit:
		return fmt.Sprintf("%s %s", strings.Replace(e.Type.String(), "_", " ", 1), e.VecName)
	case trace.EventTimerEntry, trace.EventTimerExit:
		ctx := "softirq"
		if e.HardIRQ {
			ctx = "hard IRQ"
		}
		s := fmt.Sprintf("%s %s (%s)", strings.Replace(e.Type.String(), "_", " ", 1), e.Function, ctx)
		if e.ExpiryT != nil {
			s += fmt.Sprintf(", expiry %s", units.UsFine(*e.ExpiryT))
		}
		return s
	case trace.EventSleep:
		s := fmt.Sprintf("sleep    %s %s: %s", task(e.TID, e.Comm, ""), e.State, e.Reason)
		if e.BlockedIn != "" {
			s += " in " + e.BlockedIn
		}
		if e.ExpiryT != nil {
			s += fmt.Sprintf(" until %s", units.UsFine(*e.ExpiryT))
		}
		return s
	case trace.EventFaults:
		return fmt.Sprintf("faults   %s: %d minor, %d major page faults in its run", task(e.TID, e.Comm, ""), e.MinorFaults, e.MajorFaults)
	case trace.EventUserReturn:
		return fmt.Sprintf("return   %s to user space", task(e.TID, e.Comm, ""))
	case trace.EventTimerArm:
		s := fmt.Sprintf("arm      %s its timer", task(e.TID, e.Comm, ""))
		if e.ExpiryT != nil {
			s += fmt.Sprintf(" for %s", units.UsFine(*e.ExpiryT))
		}
		if e.Missed {
			s += ": already past, no sleep (missed deadline)"
		}
		return s
	case trace.EventHandlerEntry, trace.EventHandlerExit:
		return fmt.Sprintf("%s %s IRQ %d", strings.Replace(e.Type.String(), "_", " ", 1), task(e.TID, e.Comm, ""), deref(e.IRQ))
	case trace.EventExit:
		return fmt.Sprintf("exit     %s", task(e.TID, e.Comm, ""))
	case trace.EventStack:
		where := "user space"
		if len(e.Stack) > 0 {
			where = strings.Join(e.Stack, " <- ")
		}
		return fmt.Sprintf("stack    %s runs while tid %d waits: %s", task(e.TID, e.Comm, ""), e.WaitingTID, where)
	}
	return e.Type.String()
}

func deref(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}
