package analysis

import (
	"fmt"
	"io"
	"strings"

	"github.com/rtscope/rtscope/internal/units"
)

// WriteText prints the breakdown the way rtla's auto-analysis does: each
// cause with its time and share, the total at 100%, the blocking thread with
// its stack, the timer releases, and what was ruled out. The verdict is
// printed by the caller.
func (r *Result) WriteText(w io.Writer, indent string) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "%sbreakdown of the %s us window (times in us):\n", indent, units.Us(r.WindowNs))
	width := 10
	for _, it := range r.Breakdown {
		if n := len(it.describeWoke()); n > width {
			width = min(n, 72)
		}
	}
	for _, it := range r.Breakdown {
		label := it.describeWoke()
		if len(label) > 72 {
			label = label[:69] + "..."
		}
		fmt.Fprintf(w, "%s  %-9s %-*s %10s %6.1f%%\n", indent, it.Phase, width, label, units.Us(it.Ns), it.Percent)
	}
	fmt.Fprintf(w, "%s  %-9s %-*s %10s %6.1f%%\n", indent, "total", width, "", units.Us(r.WindowNs), 100.0)
	if r.StealNs == nil {
		fmt.Fprintf(w, "%s  hypervisor steal in the window: unknown (no steal clock)\n", indent)
	} else {
		fmt.Fprintf(w, "%s  hypervisor steal in the window: %s us\n", indent, units.Us(*r.StealNs))
	}
	if t := r.BlockingThread; t != nil {
		fmt.Fprintf(w, "%s  blocking thread: %s", indent, who(t))
		switch {
		case len(t.Stack) > 0:
			fmt.Fprintf(w, ", kernel stack:\n")
			for _, f := range t.Stack {
				fmt.Fprintf(w, "%s    -> %s\n", indent, f)
			}
		case t.Sampled:
			fmt.Fprintf(w, ", sampled in user space\n")
		default:
			fmt.Fprintf(w, " (no stack sample)\n")
		}
	}
	for _, rel := range r.Releases {
		fmt.Fprintf(w, "%s  timer release (%s): expiry at %s us", indent, rel.Where, units.UsFine(rel.ExpiryT))
		if rel.SlackNs != nil {
			fmt.Fprintf(w, " (slack %s us)", units.Us(*rel.SlackNs))
		}
		if rel.WakeupNs != nil {
			fmt.Fprintf(w, ", wakeup %s us after it", units.UsFine(*rel.WakeupNs))
		}
		if rel.IRQDelayNs != nil {
			fmt.Fprintf(w, "; IRQ handler delay %s us", units.UsFine(*rel.IRQDelayNs))
			if rel.CallbackNs != nil {
				fmt.Fprintf(w, ", callback to wakeup %s us", units.UsFine(*rel.CallbackNs))
			}
			if inSlack(&rel) {
				fmt.Fprintf(w, "; inside its timer's slack (the kernel's choice)")
			} else {
				fmt.Fprintf(w, "; CPU %d %s meanwhile", rel.CPU, stateWords(&rel, r.idleExitNs))
			}
		}
		fmt.Fprintln(w)
	}
	if inv := r.Inversion; inv != nil {
		fmt.Fprintf(w, "%s  futex owner %s during the %s us wait: running %s, preempted by middle priorities %s, by higher %s, other %s, unknown %s\n",
			indent, who(&inv.Owner), units.Us(inv.BlockedNs), units.Us(inv.OwnerRunNs), units.Us(inv.OwnerWaitNs),
			units.Us(inv.OwnerHighNs), units.Us(inv.OwnerOther), units.Us(inv.OwnerUnkn))
		for i, p := range inv.Preempters {
			fmt.Fprintf(w, "%s    preempted by %s for %s us\n", indent, who(p), units.Us(inv.PreempterNs[i]))
		}
	}
	for _, m := range r.Migrations {
		fmt.Fprintf(w, "%s  migrated from CPU %d to CPU %d at %s us\n", indent, m.From, m.To, units.UsFine(m.T))
	}
	if len(r.RuledOut) > 0 {
		fmt.Fprintf(w, "%s  ruled out: %s\n", indent, strings.Join(r.RuledOut, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "%s  note: %s\n", indent, n)
	}
}
