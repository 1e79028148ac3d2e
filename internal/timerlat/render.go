package timerlat

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rtscope/rtscope/internal/units"
)

// The layouts below are those of rtla timerlat top/hist and cyclictest, so
// that their users and their scripts read rtscope's output unchanged.

const noValue = "        -" // rtla's unset column

func (o *Options) divisor() uint64 {
	if o.Nano {
		return 1
	}
	return 1000
}

func (o *Options) unit() string {
	if o.Nano {
		return "ns"
	}
	return "us"
}

// formatDuration is rtla's "%3d %02d:%02d:%02d" (days hours:minutes:seconds).
func formatDuration(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%3d %02d:%02d:%02d", s/86400, s/3600%24, s/60%60, s%60)
}

// RenderTop prints the rtla timerlat top table: a row per CPU, then ALL.
func RenderTop(w io.Writer, r *Result, o *Options) {
	var b strings.Builder
	user := !o.NoUser
	div := o.divisor()
	b.WriteString("                                     Timer Latency                                              ")
	if user {
		b.WriteString("                                         ")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%-6s   |          IRQ Timer Latency (%s)        |         Thread Timer Latency (%s)",
		formatDuration(r.Elapsed), o.unit(), o.unit())
	if user {
		fmt.Fprintf(&b, "      |    Ret user Timer Latency (%s)", o.unit())
	}
	b.WriteString("\nCPU COUNT      |      cur       min       avg       max |      cur       min       avg       max")
	if user {
		b.WriteString(" |      cur       min       avg       max")
	}
	b.WriteString("\n")

	cols := func(s Summary, last string) {
		if s.Count == 0 {
			fmt.Fprintf(&b, "%s %s %s %s%s", noValue, noValue, noValue, noValue, last)
			return
		}
		fmt.Fprintf(&b, "%9d %9d %9d %9d%s", s.Last/div, s.Min/div, s.Avg()/div, s.Max/div, last)
	}
	for _, c := range r.CPUs {
		if c.Top[IRQ].Count == 0 && c.Top[Thread].Count == 0 {
			continue
		}
		fmt.Fprintf(&b, "%3d #%-9d |", c.CPU, c.Top[IRQ].Count)
		cols(c.Top[IRQ], " |")
		cols(c.Top[Thread], "")
		if user {
			b.WriteString(" |")
			cols(c.Top[User], "")
		}
		b.WriteString("\n")
	}

	all := r.all(false)
	if all[IRQ].Count > 0 || all[Thread].Count > 0 {
		dash := strings.Repeat("-", 40)
		fmt.Fprintf(&b, "%.15s|%.40s|%.39s", dash, dash, dash)
		if user {
			fmt.Fprintf(&b, "-|%.39s", dash)
		}
		b.WriteString("\n")
		count, e := all[IRQ].Count, 0
		for count > 999999 {
			e++
			count /= 10
		}
		fmt.Fprintf(&b, "ALL #%-6d e%d |", count, e)
		sum := func(s Summary, last string) {
			if s.Count == 0 {
				fmt.Fprintf(&b, "          %s %s %s%s", noValue, noValue, noValue, last)
				return
			}
			fmt.Fprintf(&b, "          %9d %9d %9d%s", s.Min/div, s.Avg()/div, s.Max/div, last)
		}
		sum(all[IRQ], " |")
		sum(all[Thread], "")
		if user {
			b.WriteString(" |")
			sum(all[User], "")
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}

// histColumns lists the (CPU, context) columns shown, in rtla's order.
func histColumns(r *Result, o *Options) (cols []*Hist, names []string) {
	for _, c := range r.CPUs {
		if c.Hist[IRQ] == nil || (c.Hist[IRQ].Count == 0 && c.Hist[Thread].Count == 0) {
			continue
		}
		if !o.NoIRQ {
			cols, names = append(cols, c.Hist[IRQ]), append(names, fmt.Sprintf("   IRQ-%03d", c.CPU))
		}
		if !o.NoThread {
			cols, names = append(cols, c.Hist[Thread]), append(names, fmt.Sprintf("   Thr-%03d", c.CPU))
		}
		if !o.NoUser {
			cols, names = append(cols, c.Hist[User]), append(names, fmt.Sprintf("   Usr-%03d", c.CPU))
		}
	}
	return
}

// RenderHist prints the rtla timerlat hist output: header, one row per
// non-empty bucket, over:, then count/min/avg/max per column and for ALL.
func RenderHist(w io.Writer, r *Result, o *Options) {
	var b strings.Builder
	cols, names := histColumns(r, o)
	if !o.NoHeader {
		writeHistHeader(&b, r, o, names)
	}
	writeHistBuckets(&b, cols, o)
	if o.NoSummary {
		io.WriteString(w, b.String())
		return
	}
	sums := make([]Summary, len(cols))
	for i, h := range cols {
		sums[i] = h.Summary
	}
	writeHistSummary(&b, sums, o)

	all := r.all(true)
	if !o.NoIndex {
		b.WriteString("ALL:  ")
	}
	var allSums []Summary
	if !o.NoIRQ {
		b.WriteString("      IRQ")
		allSums = append(allSums, all[IRQ])
	}
	if !o.NoThread {
		b.WriteString("       Thr")
		allSums = append(allSums, all[Thread])
	}
	if !o.NoUser {
		b.WriteString("       Usr")
		allSums = append(allSums, all[User])
	}
	b.WriteString("\n")
	writeHistSummary(&b, allSums, o)
	io.WriteString(w, b.String())
}

// writeHistHeader writes the histogram's header: its unit, the duration
// and the columns' names.
func writeHistHeader(b *strings.Builder, r *Result, o *Options, names []string) {
	b.WriteString("# rtscope timerlat histogram\n")
	if o.Nano {
		b.WriteString("# Time unit is nanoseconds (ns)\n")
	} else {
		b.WriteString("# Time unit is microseconds (us)\n")
	}
	fmt.Fprintf(b, "# Duration: %s\n", formatDuration(r.Elapsed))
	if !o.NoIndex {
		b.WriteString("Index")
	}
	b.WriteString(strings.Join(names, ""))
	b.WriteString("\n")
}

// writeHistBuckets writes a row per bucket (the empty ones with
// --with-zeros only) and the over: row.
func writeHistBuckets(b *strings.Builder, cols []*Hist, o *Options) {
	for i := 0; i < o.Entries; i++ {
		var total uint64
		var row strings.Builder
		if !o.NoIndex {
			fmt.Fprintf(&row, "%-6d", uint64(i)*o.BucketUs)
		}
		for _, h := range cols {
			total += h.Counts[i]
			fmt.Fprintf(&row, "%9d ", h.Counts[i])
		}
		if total == 0 && !o.WithZeros {
			continue
		}
		b.WriteString(row.String())
		b.WriteString("\n")
	}
	if !o.NoIndex {
		b.WriteString("over: ")
	}
	for _, h := range cols {
		fmt.Fprintf(b, "%9d ", h.Over)
	}
	b.WriteString("\n")
}

// writeHistSummary writes the count, min, avg and max rows of sums ("-"
// for a column without samples), in the output's unit.
func writeHistSummary(b *strings.Builder, sums []Summary, o *Options) {
	div := o.divisor()
	value := func(s Summary, v uint64) {
		if s.Count == 0 {
			fmt.Fprintf(b, "%9c ", '-')
			return
		}
		fmt.Fprintf(b, "%9d ", v/div)
	}
	for _, row := range []struct {
		label string
		v     func(Summary)
	}{
		{"count:", func(s Summary) { fmt.Fprintf(b, "%9d ", s.Count) }},
		{"min:  ", func(s Summary) { value(s, s.Min) }},
		{"avg:  ", func(s Summary) { value(s, s.Avg()) }},
		{"max:  ", func(s Summary) { value(s, s.Max) }},
	} {
		if !o.NoIndex {
			b.WriteString(row.label)
		}
		for _, s := range sums {
			row.v(s)
		}
		b.WriteString("\n")
	}
}

// RenderCyclictest prints cyclictest's summary line per thread, for the
// return-to-user latency (the quantity cyclictest measures).
func RenderCyclictest(w io.Writer, r *Result, o *Options) {
	var b strings.Builder
	for i, c := range r.CPUs {
		s := c.Top[User]
		fmt.Fprintf(&b, "T:%2d (%5d) P:%2d I:%d C:%7d ", i, c.TID, o.Priority.cyclictestPrio(), o.PeriodUs, s.Count)
		if s.Count == 0 {
			fmt.Fprintf(&b, "Min:%7s Act:%5s Avg:%5s Max:%8s\n", "-", "-", "-", "-")
			continue
		}
		fmt.Fprintf(&b, "Min:%7d Act:%5d Avg:%5d Max:%8d\n", s.Min/1000, s.Last/1000, s.Avg()/1000, s.Max/1000)
	}
	io.WriteString(w, b.String())
}

// RenderCyclictestHist prints cyclictest's -h histogram of the
// return-to-user latency: one tab-separated column per thread.
func RenderCyclictestHist(w io.Writer, r *Result, o *Options) {
	var b strings.Builder
	var hs []*Hist
	for _, c := range r.CPUs {
		hs = append(hs, c.Hist[User])
	}
	b.WriteString("# Histogram\n")
	totals := make([]uint64, len(hs))
	for i := 0; i < o.Entries; i++ {
		fmt.Fprintf(&b, "%06d ", i)
		for j, h := range hs {
			fmt.Fprintf(&b, "%06d", h.Counts[i])
			if j < len(hs)-1 {
				b.WriteString("\t")
			}
			totals[j] += h.Counts[i]
		}
		b.WriteString("\n")
	}
	b.WriteString("# Total:")
	for _, t := range totals {
		fmt.Fprintf(&b, " %09d", t)
	}
	line := func(label string, f func(h *Hist) uint64) {
		b.WriteString("\n# " + label + ":")
		for _, h := range hs {
			if h.Count == 0 {
				fmt.Fprintf(&b, " %5s", "-")
				continue
			}
			fmt.Fprintf(&b, " %05d", f(h)/1000)
		}
	}
	line("Min Latencies", func(h *Hist) uint64 { return h.Min })
	line("Avg Latencies", func(h *Hist) uint64 { return h.Avg() })
	line("Max Latencies", func(h *Hist) uint64 { return h.Max })
	b.WriteString("\n# Histogram Overflows:")
	for _, h := range hs {
		fmt.Fprintf(&b, " %05d", h.Over)
	}
	b.WriteString("\n# Histogram Overflow at cycle number:\n")
	for i, h := range hs {
		fmt.Fprintf(&b, "# Thread %d:", i)
		for _, at := range h.OverAt {
			fmt.Fprintf(&b, " %05d", at)
		}
		if uint64(len(h.OverAt)) < h.Over {
			fmt.Fprintf(&b, " # %05d others", h.Over-uint64(len(h.OverAt)))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	io.WriteString(w, b.String())
}

// RenderLost prints, after a table, what could not be measured: missed
// periods and lost samples or events. Always printed when final is set;
// otherwise only when something was lost.
func RenderLost(w io.Writer, r *Result, final bool) {
	missed, cycles := r.missed()
	var lostSamples uint64
	for _, v := range r.Lost.Samples {
		lostSamples += v
	}
	lostSamples += r.Lost.Ring
	engine := r.Lost.Notices + r.Lost.StatsFull + r.Lost.StorageFail
	if !final && missed == 0 && lostSamples == 0 && engine == 0 {
		return
	}
	pct := 0.0
	if cycles+missed > 0 {
		pct = 100 * float64(missed) / float64(cycles+missed)
	}
	fmt.Fprintf(w, "rtscope: %d missed periods (%.2f%%), %d samples not in the histograms, %d engine events lost\n",
		missed, pct, lostSamples, engine)
}

// RenderSteal prints the hypervisor's share of the measured CPUs' time,
// when it took any: on a virtual machine the largest latencies are often
// the vCPU not running at all. prefix starts the line ("# " in cyclictest's
// format).
func RenderSteal(w io.Writer, r *Result, prefix string) {
	if r.Steal == nil || r.Steal.TotalNs == 0 || len(r.CPUs) == 0 || r.Elapsed <= 0 {
		return
	}
	worst, cpu := uint64(0), 0
	for i, v := range r.Steal.PerCPUNs {
		if v > worst {
			worst, cpu = v, r.CPUs[i].CPU
		}
	}
	share := 100 * float64(r.Steal.TotalNs) / (float64(r.Elapsed) * float64(len(r.CPUs)))
	fmt.Fprintf(w, "%srtscope: hypervisor steal %s us on the measured CPUs (%.2f%% of their time; most on CPU %d, %s us): "+
		"latencies on this virtual machine include time its vCPUs did not run\n",
		prefix, units.Us(r.Steal.TotalNs), share, cpu, units.Us(worst))
}
