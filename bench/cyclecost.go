package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// cycCostRow is one configuration of the cyclecost phase: the BPF time of
// each cyclictest cycle, in total and per program.
type cycCostRow struct {
	Name       string
	PerCycleNs []float64 // every program's run time over the run / cyclictest's cycles
	// Progs: per program name, its runs per cycle and ns per run, a value a
	// repetition.
	Progs map[string]*progCost
}

type progCost struct {
	RunsPerCycle, NsPerRun []float64
}

// phaseCycleCost: what the programs cost in a tracked cyclictest's cycle,
// read from kernel BPF run-time statistics while it runs. The CPU idles a
// millisecond between cycles, so the programs of its path (the timer
// expiry, the wakeup, the switch, the return to user) run on cold caches
// and TLBs: on the 2-vCPU EPYC VM they took 3 to 6 times their ns per run
// of the cost phase, under load (sched_waking 765 against 120 ns), and
// their sum was the tracked cyclictest's shift over the floor.
func (b *bench) phaseCycleCost() error {
	dur := 5 * time.Second
	if b.quick {
		dur = 3 * time.Second
	}
	b.res.CycCostDuration = dur
	cpu := runtime.NumCPU() - 1
	cfgs := []monitor{
		{name: "floor (empty programs, same hooks)", kind: "floor"},
		{name: clockFloorName, kind: "clock floor"},
		// The programs' work for any task against their work for a tracked one.
		{name: "rtscope loaded, cyclictest not tracked", kind: "rtscope", args: []string{"--comm", "rtscope-nobody"}, expect: 0},
		{name: "cyclictest tracked", kind: "rtscope", args: []string{"--comm", "cyclictest"}, expect: 0},
		{name: "cyclictest tracked, --no-trace", kind: "rtscope", args: []string{"--comm", "cyclictest", "--no-trace"}, expect: 0},
	}
	if b.alt != "" {
		cfgs = append(cfgs, monitor{name: "alt build, cyclictest tracked", kind: "rtscope", args: []string{"--comm", "cyclictest"}, expect: 0, bin: b.alt})
		b.res.Alt = b.alt
	}
	cfgs = b.selected(cfgs)
	rows := make([]*cycCostRow, len(cfgs))
	for i, c := range cfgs {
		rows[i] = &cycCostRow{Name: c.name, Progs: map[string]*progCost{}}
	}
	for rep := 0; rep < b.reps; rep++ {
		for _, i := range runOrder(rep, len(cfgs)) {
			c := cfgs[i]
			r, err := b.startMonitor(c)
			if err != nil {
				return err
			}
			js := filepath.Join(b.tmp, fmt.Sprintf("cyclecost-%d-%d.json", rep, i))
			w, cerr := b.measure(r, 0, func() error { return runCyclictest(cpu, dur, js) })
			res, err := stopThenRead(r, cerr, js)
			if err != nil {
				return err
			}
			if res.Cycles == 0 {
				return fmt.Errorf("cyclictest ran no cycle")
			}
			rows[i].add(w.progs, res.Cycles)
			b.logf("cyclecost %-40s rep %d: %.0f ns of BPF a cycle", c.name, rep+1, last(rows[i].PerCycleNs))
		}
	}
	b.res.CycCost = rows
	return nil
}

// add records one run: the programs' deltas over cycles cyclictest cycles.
func (c *cycCostRow) add(progs []ProgStat, cycles uint64) {
	rt, _, _ := Sum(progs)
	c.PerCycleNs = append(c.PerCycleNs, float64(rt)/float64(cycles))
	for _, p := range progs {
		if p.Count == 0 {
			continue
		}
		pc := c.Progs[p.Name]
		if pc == nil {
			pc = &progCost{}
			c.Progs[p.Name] = pc
		}
		pc.RunsPerCycle = append(pc.RunsPerCycle, float64(p.Count)/float64(cycles))
		pc.NsPerRun = append(pc.NsPerRun, float64(p.Runtime)/float64(p.Count))
	}
}

// cycCostMarkdown writes the cyclecost phase's section.
func (r *results) cycCostMarkdown(w *strings.Builder) {
	if len(r.CycCost) == 0 {
		return
	}
	p := func(f string, a ...any) { fmt.Fprintf(w, f, a...) }
	p("## 3b. BPF time in a cyclictest cycle\n\n`cyclictest -m -p 80 -i 1000 -t 1` on the last CPU, %v per run, %d run(s) per configuration, interleaved, with kernel BPF run-time statistics on (their two clock reads a run are counted in). Nothing else runs. Between cycles the CPU idles for a millisecond, so the programs on the cycle's path (hrtimer_expire_entry, sched_waking, hrtimer_expire_exit, sched_switch, rseq_update) run on cold caches: compare their ns per run with the cost phase's, under load. ns a cycle: every program's run time over the run (all CPUs, all tasks) divided by cyclictest's cycles; median (lowest..highest run).\n\n", r.CycCostDuration, r.Reps)
	p("| configuration | BPF ns a cycle |\n|---|---|\n")
	for _, c := range r.CycCost {
		p("| %s | %s |\n", c.Name, spread(c.PerCycleNs, ns))
	}
	p("\n")
	for _, c := range r.CycCost {
		if isFloor(c.Name) || len(c.Progs) == 0 {
			continue
		}
		p("%s, per program (by ns a cycle):\n\n| program | runs a cycle | ns per run | ns a cycle |\n|---|---|---|---|\n", c.Name)
		type named struct {
			name   string
			perCyc float64
			pc     *progCost
		}
		var ps []named
		for n, pc := range c.Progs {
			ps = append(ps, named{n, median(pc.RunsPerCycle) * median(pc.NsPerRun), pc})
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].perCyc > ps[j].perCyc })
		for _, x := range ps {
			p("| %s | %.2f | %s | %.0f |\n", x.name, median(x.pc.RunsPerCycle), spread(x.pc.NsPerRun, ns), x.perCyc)
		}
		p("\n")
	}
}
