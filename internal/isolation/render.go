package isolation

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rtscope/rtscope/internal/units"
)

// maxRows is how many intrusions a CPU's text report lists, largest
// total first: a busy CPU had 120 (a build and tests next to oslat).
const maxRows = 15

// secs prints a duration in seconds, one decimal.
func secs(ns uint64) string { return fmt.Sprintf("%.1f s", float64(ns)/1e9) }

// Judgement is a CPU's one-line verdict: kinds, total and worst.
func (c *CPUResult) Judgement(durationNs uint64) string {
	if c.Worst == nil {
		return fmt.Sprintf("CPU %d: no intrusion in %s", c.CPU, secs(durationNs))
	}
	src := c.Worst.What
	if c.Worst.Cause == CauseTask {
		src = c.Worst.What + " " + c.Worst.Sender
	} else if c.Worst.Sender != "" {
		// A timer's armers are a list: the first (most armings) names it.
		src += " from " + strings.SplitN(c.Worst.Sender, ", ", 2)[0]
	}
	kinds := "kinds"
	if c.Kinds == 1 {
		kinds = "kind"
	}
	return fmt.Sprintf("CPU %d: %d intrusion %s, %s us in %s, worst %s us (%s)", c.CPU, c.Kinds, kinds,
		units.Us(c.TotalNs), secs(durationNs), units.Us(c.Worst.MaxNs), src)
}

// Print writes r's text report: each CPU's judgement first, then its
// intrusions with their remedies, the tick and the steal.
func Print(w io.Writer, r *Result) {
	for i := range r.CPUs {
		fmt.Fprintln(w, r.CPUs[i].Judgement(r.DurationNs))
	}
	for i := range r.CPUs {
		printCPU(w, &r.CPUs[i], r.DurationNs)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintf(w, "\nnot watched (this kernel lacks the tracepoints): %s\n", strings.Join(r.Missing, ", "))
	}
	if r.Lost > 0 {
		fmt.Fprintf(w, "\n%d entries not counted: a map was full\n", r.Lost)
	}
	printEngine(w, r)
}

// printEngine says, after a classic engine's report, why it ran and what
// it cannot see (the BTF engine's report says nothing).
func printEngine(w io.Writer, r *Result) {
	if r.EngineNote == "" && len(r.EngineLimits) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s engine (%s); it cannot see:\n", r.Engine, r.EngineNote)
	for _, l := range r.EngineLimits {
		fmt.Fprintf(w, "  - %s\n", l)
	}
}

func printCPU(w io.Writer, c *CPUResult, durationNs uint64) {
	fmt.Fprintf(w, "\nCPU %d (%s)\n", c.CPU, cpuSetting(c))
	wl := c.Workload
	if len(wl) > 3 {
		wl = append(wl[:3:3], fmt.Sprintf("%d more", len(c.Workload)-3))
	}
	switch {
	case len(wl) > 0 && c.Guessed:
		fmt.Fprintf(w, "  workload: %s (named as the task that ran longest; name it with --allow)\n", strings.Join(wl, ", "))
	case len(wl) > 0:
		fmt.Fprintf(w, "  workload: %s (--allow)\n", strings.Join(wl, ", "))
	}
	if len(c.Intrusions) > 0 {
		fmt.Fprintf(w, "  %-8s %-44s %-32s %8s %10s %9s\n", "cause", "what", "sender", "count", "total us", "worst us")
	}
	shown := c.Intrusions
	if len(shown) > maxRows {
		shown = shown[:maxRows]
	}
	for _, in := range shown {
		worst := units.Us(in.MaxNs)
		total := units.Us(in.Ns)
		if in.Ns == 0 { // counted only (IPIs with no send seen have no handler time kept)
			worst, total = units.Unset, units.Unset
		}
		fmt.Fprintf(w, "  %-8s %-44s %-32s %8d %10s %9s\n", in.Cause, clip(in.What, 44), clip(orDash(in.Sender), 32), in.Count, total, worst)
		if len(in.Sender) > 32 {
			fmt.Fprintf(w, "           sender: %s\n", in.Sender)
		}
		fmt.Fprintf(w, "           remedy: %s\n", in.Remedy)
	}
	if rest := c.Intrusions[len(shown):]; len(rest) > 0 {
		var t Time
		for _, in := range rest {
			t.add(in.Time)
		}
		fmt.Fprintf(w, "  and %d smaller ones: %d events, %s us in all, worst %s us (every one in --json)\n", len(rest), t.Count, units.Us(t.Ns), units.Us(t.MaxNs))
	}
	if t := c.Tick; t != nil && t.Fired.Count > 0 {
		fmt.Fprintf(w, "  tick: fired %s, %s us in all, worst %s us (its own hrtimer: not counted above)\n",
			times(t.Fired.Count), units.Us(t.Fired.Ns), units.Us(t.Fired.MaxNs))
	}
	if t := c.Tick; t != nil && (t.Stopped+t.Kept > 0 || t.StoppedAtStart != nil || t.TimerIRQs != nil) {
		fmt.Fprintf(w, "  tick: %s\n", tickSummary(t, durationNs))
		deps := make([]string, 0, len(t.Deps))
		for d := range t.Deps {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, d := range deps {
			fmt.Fprintf(w, "    kept %s by %s: %s%s\n", times(t.Deps[d]), d, tickWhy(d), schedTasks(c, d))
		}
	}
	fmt.Fprintf(w, "  hypervisor steal: %s us (/proc/stat, in 10 ms steps; the vCPU did not run: not counted above)\n", units.Us(c.StealNs))
}

func times(n uint64) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func cpuSetting(c *CPUResult) string {
	var s []string
	if c.Isolated {
		s = append(s, "isolated")
	}
	if c.NohzFull {
		s = append(s, "nohz_full")
	}
	if len(s) == 0 {
		return "neither isolated nor nohz_full"
	}
	return strings.Join(s, ", ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "~"
}

// WriteJSON writes r as JSON (docs/isolation.md).
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
