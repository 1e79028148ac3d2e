package timerlat

import (
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/metric"
)

// fixture builds a deterministic two-CPU result: every view is rendered
// from it and compared with its golden file.
func fixture(o *Options) *Result {
	r := &Result{Elapsed: 90*time.Minute + 61*time.Second, PeriodUs: o.PeriodUs, Priority: o.Priority, DMALatency: o.DMALatency}
	seed := uint64(42)
	rnd := func(n uint64) uint64 { // LCG: the same numbers on every machine
		seed = seed*6364136223846793005 + 1442695040888963407
		return (seed >> 33) % n
	}
	for i, cpu := range []int{0, 3} {
		c := &CPUResult{CPU: cpu, TID: 4242 + i, Cycles: 3000, Missed: uint64(i)}
		for k := 0; k < nCtx; k++ {
			c.Hist[k] = newHist(o.BucketUs*o.divisor(), o.Entries)
		}
		for n := uint64(0); n < 3000; n++ {
			irq := 500 + rnd(4000) + 1000*uint64(i)
			if n%997 == 5 {
				irq += 40000 // a few outliers beyond small histograms
			}
			thr := irq + 2000 + rnd(6000)
			usr := thr + 300 + rnd(900)
			v := [nCtx]uint64{irq, thr, usr}
			for k := 0; k < nCtx; k++ {
				if i == 1 && k == User {
					continue // no return-to-user samples on this CPU: shown unset
				}
				c.Hist[k].add(v[k], n)
				c.Top[k].add(v[k])
				if c.Engine[k].Hist == nil {
					c.Engine[k].Hist = make([]uint32, metric.Buckets)
				}
				c.Engine[k].Hist[metric.Bucket(v[k])]++
			}
		}
		for k := 0; k < nCtx; k++ {
			t := c.Top[k]
			c.Engine[k] = engineStats(t.Count, t.Sum, t.Min, t.Max, c.Engine[k].Hist)
		}
		c.Top[IRQ].Count++ // the engine saw one more release than was copied
		r.CPUs = append(r.CPUs, c)
	}
	r.Lost.Samples[Thread] = 1
	// The hypervisor took 30 ms of CPU 0 and 120 ms of CPU 3 (CPU 1 is not
	// measured: its steal is not counted).
	r.Steal = stealOver(r.CPUs, []uint64{100, 5, 7, 1000}, []uint64{100 + 30e6, 9e9, 7, 1000 + 120e6})
	return r
}

func mustParse(t *testing.T, args ...string) Options {
	t.Helper()
	o, _, err := ParseArgs(args, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestRenderGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
		view func(*strings.Builder, *Result, *Options)
	}{
		{"top.golden", []string{"top"}, func(b *strings.Builder, r *Result, o *Options) { Print(b, r, o) }},
		{"top_nouser.golden", []string{"top", "--no-user"}, func(b *strings.Builder, r *Result, o *Options) { RenderTop(b, r, o) }},
		{"top_nano.golden", []string{"top", "-n"}, func(b *strings.Builder, r *Result, o *Options) { RenderTop(b, r, o) }},
		{"hist.golden", []string{"hist", "-E", "60"}, func(b *strings.Builder, r *Result, o *Options) { Print(b, r, o) }},
		{"hist_bucket.golden", []string{"hist", "-b", "5", "-E", "10", "--no-irq"}, func(b *strings.Builder, r *Result, o *Options) { RenderHist(b, r, o) }},
		{"hist_noindex.golden", []string{"hist", "-b", "4", "-E", "12", "--no-index", "--with-zeros", "--no-thread"}, func(b *strings.Builder, r *Result, o *Options) { RenderHist(b, r, o) }},
		{"hist_noheader.golden", []string{"hist", "-E", "10", "--no-header", "--no-summary", "--no-user"}, func(b *strings.Builder, r *Result, o *Options) { RenderHist(b, r, o) }},
		{"hist_nano.golden", []string{"hist", "-n", "-b", "1000", "-E", "10", "--no-user"}, func(b *strings.Builder, r *Result, o *Options) { RenderHist(b, r, o) }},
		{"cyclictest.golden", []string{"top", "--cyclictest", "--dma-latency", "0"}, func(b *strings.Builder, r *Result, o *Options) { Print(b, r, o) }},
		{"cyclictest_hist.golden", []string{"hist", "--cyclictest", "-E", "12"}, func(b *strings.Builder, r *Result, o *Options) { Print(b, r, o) }},
		{"json.golden", []string{"hist", "-E", "10", "-i", "50", "-d", "90s"}, func(b *strings.Builder, r *Result, o *Options) {
			r.Stop = &Stop{CPU: 3, TID: 4243, Context: IRQ, Value: 51234, ThresholdUs: 50,
				Sample: &Sample{Valid: [nCtx]bool{true, true, false}, Value: [nCtx]uint64{51234, 60000, 0}}}
			r.Verdict = StopVerdict{Verdict: "hard-IRQ noise: example", Cause: "hardirq"}
			r.Crossings, r.ActionsFired = 1, 1
			if err := WriteJSON(b, r, o); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		o := mustParse(t, c.args...)
		var b strings.Builder
		c.view(&b, fixture(&o), &o)
		golden(t, c.name, b.String())
	}
}

// The ALL row of top prints large counts with an exponent, as rtla.
func TestTopAllExponent(t *testing.T) {
	o := mustParse(t, "top")
	r := &Result{CPUs: []*CPUResult{{CPU: 0}}}
	r.CPUs[0].Top[IRQ] = Summary{Count: 12345678, Sum: 12345678 * 2000, Min: 1000, Max: 9000, Last: 2000}
	var b strings.Builder
	RenderTop(&b, r, &o)
	if !strings.Contains(b.String(), "ALL #123456 e2 |") {
		t.Errorf("ALL row:\n%s", b.String())
	}
	// Thread and user without samples print rtla's "-".
	if !strings.Contains(b.String(), "|        -         -         -         - |") {
		t.Errorf("unset columns:\n%s", b.String())
	}
}

func TestStopReport(t *testing.T) {
	o := mustParse(t, "top", "-a", "50", "-t", "x.txt")
	r := fixture(&o)
	r.Stop = &Stop{CPU: 3, TID: 4243, Context: Thread, Value: 51234, ThresholdUs: 50,
		Sample: &Sample{Valid: [nCtx]bool{true, true, true}, Value: [nCtx]uint64{1500, 51234, 52000}}}
	r.Analysis = "(analysis)\n"
	var b strings.Builder
	Print(&b, r, &o)
	golden(t, "stop.golden", b.String())
}

// Steal is counted on the measured CPUs only, never negative, and printed
// only when the hypervisor took some.
func TestSteal(t *testing.T) {
	cpus := []*CPUResult{{CPU: 0}, {CPU: 2}, {CPU: 5}}
	s := stealOver(cpus, []uint64{10, 20, 30}, []uint64{15, 99, 20})
	if s.TotalNs != 5 || len(s.PerCPUNs) != 3 || s.PerCPUNs[0] != 5 || s.PerCPUNs[1] != 0 || s.PerCPUNs[2] != 0 {
		t.Errorf("steal %+v: want CPU 0's 5 ns only (CPU 2 went back, CPU 5 unknown)", s)
	}
	if stealOver(cpus, nil, []uint64{1}) != nil {
		t.Error("steal without a start reading")
	}
	r := &Result{CPUs: cpus, Elapsed: time.Second, Steal: &Steal{PerCPUNs: []uint64{0, 0, 0}}}
	var b strings.Builder
	RenderSteal(&b, r, "")
	if b.Len() != 0 {
		t.Errorf("no steal printed: %q", b.String())
	}
	r.Steal = &Steal{PerCPUNs: []uint64{0, 30e6, 0}, TotalNs: 30e6}
	RenderSteal(&b, r, "# ")
	if want := "# rtscope: hypervisor steal 30000.0 us on the measured CPUs (1.00% of their time; most on CPU 2, 30000.0 us)"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("got %q, want %q...", b.String(), want)
	}
}

func TestHistAdd(t *testing.T) {
	h := newHist(1000, 10)
	for i, v := range []uint64{0, 999, 1000, 9999, 10000, 123456} {
		h.add(v, uint64(i))
	}
	if h.Counts[0] != 2 || h.Counts[1] != 1 || h.Counts[9] != 1 || h.Over != 2 {
		t.Errorf("counts %v over %d", h.Counts, h.Over)
	}
	if h.Count != 6 || h.Min != 0 || h.Max != 123456 || h.Last != 123456 {
		t.Errorf("summary %+v", h.Summary)
	}
	if len(h.OverAt) != 2 || h.OverAt[0] != 4 || h.OverAt[1] != 5 {
		t.Errorf("overflow cycles %v", h.OverAt)
	}
}

func TestDecoder(t *testing.T) {
	d := decoder{prev: map[uint32][nCtx]uint64{}}
	type in struct {
		count, value, end [3]uint64
	}
	steps := []struct {
		in    in
		valid [nCtx]bool
	}{
		// First release: all three contexts, windows starting at expiry 1000.
		{in{[3]uint64{1, 1, 1}, [3]uint64{5, 20, 25}, [3]uint64{1005, 1020, 1025}}, [nCtx]bool{true, true, true}},
		// Copy without a new release (restarted sleep): nothing.
		{in{[3]uint64{1, 1, 1}, [3]uint64{5, 20, 25}, [3]uint64{1005, 1020, 1025}}, [nCtx]bool{}},
		// No user return measured for this release: user is lost.
		{in{[3]uint64{2, 2, 1}, [3]uint64{4, 18, 25}, [3]uint64{2004, 2018, 1025}}, [nCtx]bool{true, true, false}},
		// Two releases between copies: the older one is lost in every context.
		{in{[3]uint64{4, 4, 3}, [3]uint64{3, 15, 19}, [3]uint64{4003, 4015, 4019}}, [nCtx]bool{true, true, true}},
		// A thread value of an older release (window start differs): not taken.
		{in{[3]uint64{5, 5, 4}, [3]uint64{6, 30, 35}, [3]uint64{5006, 4530, 5035}}, [nCtx]bool{true, false, true}},
	}
	for i, s := range steps {
		got := d.decode(1, 77, s.in.count, s.in.value, s.in.end)
		if got.Valid != s.valid {
			t.Errorf("step %d: valid %v, want %v", i, got.Valid, s.valid)
		}
		for k := 0; k < nCtx; k++ {
			if got.Valid[k] && got.Value[k] != s.in.value[k] {
				t.Errorf("step %d: context %d value %d", i, k, got.Value[k])
			}
		}
	}
	if d.Lost != [nCtx]uint64{1, 2, 2} {
		t.Errorf("lost %v", d.Lost)
	}
}
