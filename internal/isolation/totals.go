package isolation

import "sort"

// Causes are the causes of Result's intrusions, in report order: the
// cause label of serve's per-CPU intrusion counters, each present (zero)
// from the start.
var Causes = []string{CauseIPI, CauseIRQ, CauseSoftirq, CauseWork, CauseTimer, CauseTask}

// CauseTotal is one CPU's intrusions of one cause: how many (IPIs, IRQ
// and softirq runs, work items run, foreign tasks' switch-outs) and their
// time in nanoseconds.
type CauseTotal struct {
	CPU   int
	Cause string
	Count uint64
	Ns    uint64
}

// Totals sums r's intrusions by CPU and cause, senders and tasks folded
// (serve's labels stay bounded by CPUs times causes): each watched CPU in
// r's order gets a row per cause of Causes, then one per other cause seen
// (a cause added later), by name.
func Totals(r *Result) []CauseTotal {
	var out []CauseTotal
	for _, c := range r.CPUs {
		sum := map[string]*CauseTotal{}
		var extra []string
		for _, cause := range Causes {
			sum[cause] = &CauseTotal{CPU: c.CPU, Cause: cause}
		}
		for _, in := range c.Intrusions {
			t := sum[in.Cause]
			if t == nil {
				t = &CauseTotal{CPU: c.CPU, Cause: in.Cause}
				sum[in.Cause] = t
				extra = append(extra, in.Cause)
			}
			t.Count += in.Count
			t.Ns += in.Ns
		}
		sort.Strings(extra)
		for _, cause := range append(append([]string(nil), Causes...), extra...) {
			out = append(out, *sum[cause])
		}
	}
	return out
}
