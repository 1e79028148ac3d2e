package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/trace"
	"github.com/rtscope/rtscope/internal/units"
)

// Explanation is what the analysis says of one window: the verdict for
// people, the cause and culprit for machines and for cause histograms, the
// hypervisor's share, and the full result (printed with --traces, in JSON).
// internal/explain makes it from an analysis result: report does not know
// the analysis, only this and the Analysis interface.
type Explanation struct {
	Verdict string
	Cause   string // the cause's name, as the JSON writes it
	Culprit string
	StealNs *uint64 // nil: no steal clock
	// MonitorNs: the time rtscope's own threads ran on the window's CPUs
	// while the task waited or was interrupted (the observer effect).
	MonitorNs uint64
	// ByMonitor: rtscope's own threads dominate the window (cause monitor);
	// ByPlatform: the CPU did not run (hypervisor steal, or a stall
	// nothing accounts).
	ByMonitor, ByPlatform bool
	Detail                Analysis
}

// Analysis is the full analysis of one window as the report holds it:
// written as JSON (its fields) and, with --traces, printed by WriteText.
// A report read back from JSON holds a Decoded.
type Analysis interface {
	// WriteText prints the analysis, each line prefixed by indent.
	WriteText(w io.Writer, indent string)
}

// Decoded is an analysis read back from a JSON report: its fields as
// encoding/json decodes them. It prints nothing (the text needs the
// analysis' own types).
type Decoded map[string]any

// WriteText prints nothing: see Decoded.
func (Decoded) WriteText(io.Writer, string) {}

// Why a violation was not explained (Violations.NotAnalysed keys).
const (
	NotAnalysedKernelLimit = "not noticed: at most one notice a millisecond per task, or the notice ring was full"
	NotAnalysedBudget      = "analysis budget: windows a second beyond the limit"
	NotAnalysedNoTrace     = "no flight recorder (--no-trace)"
)

// maxCauses bounds the distinct causes kept per task and metric; the rest
// are counted under OtherCause.
const maxCauses = 16

// OtherCause is the histogram's bar of the causes beyond maxCauses: the
// report's own word, beside the analysis' causes.
const OtherCause = "other"

// examplesKept: the top causes keep their example window (the others keep
// its verdict only), to bound the report.
const examplesKept = 3

// Violations explains the SLO violations of one metric of one task: how
// many were analysed, why the others were not, and a histogram of their
// causes, most frequent first, each with an example. Not safe for
// concurrent use.
type Violations struct {
	Total       uint64            `json:"total"`
	Analysed    uint64            `json:"analysed"`
	NotAnalysed map[string]uint64 `json:"not_analysed"`
	Causes      []*ViolationCause `json:"causes"`
}

// ViolationCause is one bar of the histogram.
type ViolationCause struct {
	Cause   string  `json:"cause"`
	Culprit string  `json:"culprit"`
	Count   uint64  `json:"count"`
	Percent float64 `json:"percent"`  // of the analysed violations
	StealNs uint64  `json:"steal_ns"` // hypervisor time inside these windows
	// MonitorNs: rtscope's own threads' time inside these windows.
	MonitorNs uint64            `json:"monitor_ns"`
	Example   *ViolationExample `json:"example"`
}

// ViolationExample is the largest violation of a cause.
type ViolationExample struct {
	ValueNs uint64       `json:"value_ns"`
	StartNs uint64       `json:"start_ns"` // CLOCK_MONOTONIC
	Verdict string       `json:"verdict"`
	Window  *trace.Trace `json:"window,omitempty"` // the top causes only
}

// Add counts one explained violation of value ns whose window is tr.
func (v *Violations) Add(e Explanation, value uint64, tr *trace.Trace) {
	v.Analysed++
	key := func(c *ViolationCause) bool { return c.Cause == e.Cause && c.Culprit == e.Culprit }
	var c *ViolationCause
	for _, x := range v.Causes {
		if key(x) {
			c = x
			break
		}
	}
	if c == nil {
		if len(v.Causes) >= maxCauses {
			for _, x := range v.Causes {
				if x.Cause == OtherCause {
					c = x
				}
			}
			if c == nil {
				c = &ViolationCause{Cause: OtherCause, Culprit: fmt.Sprintf("causes beyond the first %d", maxCauses-1)}
				v.Causes[len(v.Causes)-1] = c
			}
		} else {
			c = &ViolationCause{Cause: e.Cause, Culprit: e.Culprit}
			v.Causes = append(v.Causes, c)
		}
	}
	c.Count++
	if e.StealNs != nil {
		c.StealNs += *e.StealNs
	}
	c.MonitorNs += e.MonitorNs
	if c.Example == nil || value > c.Example.ValueNs {
		c.Example = &ViolationExample{ValueNs: value, StartNs: tr.Start, Verdict: e.Verdict, Window: tr}
	}
}

// Skip counts a violation not explained, and why.
func (v *Violations) Skip(reason string, n uint64) {
	if n == 0 {
		return
	}
	if v.NotAnalysed == nil {
		v.NotAnalysed = map[string]uint64{}
	}
	v.NotAnalysed[reason] += n
}

// Finish sets the total from the kernel's count, charges the violations
// that never reached user space to the kernel's notice limit, orders the
// causes and drops the windows of all but the top ones. It returns a copy;
// v keeps counting.
func (v *Violations) Finish(total uint64) *Violations {
	out := &Violations{Total: total, Analysed: v.Analysed, NotAnalysed: map[string]uint64{}}
	seen := v.Analysed
	for k, n := range v.NotAnalysed {
		out.NotAnalysed[k] = n
		seen += n
	}
	if total > seen {
		out.NotAnalysed[NotAnalysedKernelLimit] += total - seen
	}
	for _, c := range v.Causes {
		x := *c
		if c.Example != nil {
			ex := *c.Example
			x.Example = &ex
		}
		out.Causes = append(out.Causes, &x)
	}
	sort.SliceStable(out.Causes, func(i, j int) bool { return out.Causes[i].Count > out.Causes[j].Count })
	for i, c := range out.Causes {
		if v.Analysed > 0 {
			c.Percent = float64(c.Count*1000/v.Analysed) / 10
		}
		if i >= examplesKept && c.Example != nil {
			c.Example.Window = nil
		}
	}
	return out
}

// TopCause is the most frequent cause, nil when none was analysed.
func (v *Violations) TopCause() *ViolationCause {
	if v == nil || len(v.Causes) == 0 {
		return nil
	}
	return v.Causes[0]
}

// WriteText prints the histogram: "251 over 1000.0 us, 200 explained: 80%
// interference: hog/12 (FIFO 90), 15% hypervisor, ...".
func (v *Violations) WriteText(w io.Writer, metricName string, slo uint64, indent string) {
	if v == nil || v.Total == 0 {
		return
	}
	fmt.Fprintf(w, "%s%s: %d over the %s us SLO, %d explained", indent, metricName, v.Total, units.Us(slo), v.Analysed)
	var parts []string
	for _, c := range v.Causes {
		p := fmt.Sprintf("%.0f%% %s", c.Percent, c.Cause)
		if c.Culprit != "" && c.Culprit != c.Cause {
			p += ": " + c.Culprit
		}
		parts = append(parts, p)
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	reasons := make([]string, 0, len(v.NotAnalysed))
	for k := range v.NotAnalysed {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		fmt.Fprintf(w, "%s  %d not explained (%s)\n", indent, v.NotAnalysed[k], k)
	}
	for i, c := range v.Causes {
		if i >= examplesKept || c.Example == nil {
			break
		}
		fmt.Fprintf(w, "%s  e.g. %s us: %s\n", indent, units.Us(c.Example.ValueNs), c.Example.Verdict)
	}
}

// WriteMonitor prints rtscope's own share of the windows it explained,
// when it had one: the observer effect, for the user to see.
func WriteMonitor(w io.Writer, m *Monitor) {
	if m == nil || m.WorstCaseMonitorNs+m.ViolationMonitorNs == 0 {
		return
	}
	fmt.Fprintf(w, "rtscope watch: the monitor itself (rtscope's own threads) ran %s us inside %d of %d worst cases (%d mostly its own)",
		units.Us(m.WorstCaseMonitorNs), m.WorstCasesWithMonitor, m.WorstCases, m.WorstCasesMonitor)
	if m.Violations > 0 {
		fmt.Fprintf(w, " and %s us inside %d of %d explained SLO violations (%d mostly its own)",
			units.Us(m.ViolationMonitorNs), m.ViolationsWithMonitor, m.Violations, m.ViolationsMonitor)
	}
	fmt.Fprintln(w, "; -H keeps it off the watched CPUs")
}

// WriteThrottling prints the throttling configuration and the throttled
// intervals of the tasks, when the report has it (watch since its
// throttling analysis).
func WriteThrottling(w io.Writer, r *Report) {
	if r.Throttling == nil {
		return
	}
	var n, worst uint64
	for _, t := range r.Tasks {
		n += t.Counters.Throttled
		for _, m := range t.Metrics {
			if m.Cause == causeThrottling {
				worst++
			}
		}
	}
	// The counter holds switch-outs to a lower class; a task woken while
	// its class was throttled has none, and a worst case may still be
	// throttling (stress-ng --cyclic: "0 throttled interval(s)" under a
	// throttling verdict).
	fmt.Fprintf(w, "rtscope watch: RT throttling: %s; %d throttled switch-out(s) of the tasks shown", r.Throttling.Words(), n)
	if worst > 0 {
		fmt.Fprintf(w, ", %d worst case(s) throttled", worst)
	}
	fmt.Fprintln(w)
}

// stealTickNs is /proc/stat's unit of steal (USER_HZ 100): the run's
// steal is known to 10 ms, a CPU.
const stealTickNs = 10_000_000

// WriteSteal prints the hypervisor's share of the run and of its worst
// cases in one line. The run's figure is /proc/stat's, in 10 ms steps a
// CPU: a run whose windows held 17 ms of steal read "0.0 us over the run"
// (pmqtest, 5.6 s, each CPU's counter short of its next step), so a run
// below one step says so. A stall inside several windows (a task's
// timer-irq, timer-thread and timer-user windows share its cycle) counts
// in each: the sum says so.
func WriteSteal(w io.Writer, s *Steal, durationNs uint64) {
	if s == nil {
		return
	}
	ncpu := uint64(len(s.PerCPUNs))
	if s.RunNs == 0 {
		fmt.Fprintf(w, "rtscope watch: hypervisor steal over the run: under %d us a CPU (/proc/stat: %d us steps)",
			stealTickNs/1000, stealTickNs/1000)
	} else {
		share := ""
		if ncpu > 0 && durationNs > 0 {
			share = fmt.Sprintf("%.1f%% of CPU time; ", float64(s.RunNs)*100/float64(durationNs*ncpu))
		}
		fmt.Fprintf(w, "rtscope watch: hypervisor steal over the run: %d us (%s/proc/stat: %d us steps)",
			s.RunNs/1000, share, stealTickNs/1000)
	}
	if !s.Readable {
		fmt.Fprintf(w, "; steal inside windows unknown: %s\n", strings.TrimPrefix(s.Clock, "unreadable: "))
		return
	}
	fmt.Fprintf(w, "; %d of %d worst cases hold steal", s.WorstCasesWithSteal, s.WorstCases)
	switch {
	case s.WorstCasesWithSteal > 1:
		fmt.Fprintf(w, " (%s us summed over them, a stall counted in each window it is in)", units.Us(s.WorstCaseStealNs))
	case s.WorstCasesWithSteal == 1:
		fmt.Fprintf(w, " (%s us)", units.Us(s.WorstCaseStealNs))
	}
	fmt.Fprintf(w, ", %d mostly the platform's", s.WorstCasesHypervisor)
	if s.WorstCasesHypervisor > s.WorstCasesWithSteal {
		fmt.Fprint(w, " (steal, or a CPU that did not run)")
	}
	fmt.Fprintln(w)
}
