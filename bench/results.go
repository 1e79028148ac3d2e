package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/rtscope/rtscope/internal/engine"
)

// The origin design's published figures (reference paper, sections 4 and 5).
const (
	originAvg0     = 463.0  // ns per probe, nothing tracked
	originAvg3     = 997.0  // ns per probe, 3 PIDs tracked
	originPerPID   = 175.0  // ns per probe per tracked PID (linear growth)
	originMax3     = 11080. // ns, max in probe, 3 PIDs tracked
	originMemBytes = 19398656
	originCycAvgUs = 1.7 // cyclictest average latency increase when tracked
)

type results struct {
	Machine     machine
	Quick       bool
	Reps        int
	Duration    time.Duration
	Errors      []string
	CostLoad    time.Duration
	Cost        []*costRow
	IPILoad     time.Duration
	IPI         []*ipiRow
	ScaleWindow time.Duration
	Scale       []*scaleRow
	LossLoad    time.Duration
	LossWorkers int
	Loss        []*lossRow
	CycDuration time.Duration
	CycReps     int
	CycCPU      int
	Cyc         []*cycRow
	// CycCost: the cyclecost phase (BPF time in a cyclictest cycle).
	CycCostDuration time.Duration
	CycCost         []*cycCostRow
	Start           *startRow
	Timed           *timedResult
	SelfWindow      time.Duration
	Self            []*selfRow
	Alt             string
	Version         string // rtscope version output of the binary under test
}

type machine struct {
	CPU, Kernel, Preempt, Virt, Memory, Tools, Load, Foreign string
	CPUs                                                     int
	Date                                                     string
}

func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Date: time.Now().UTC().Format("2006-01-02 15:04 MST")}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				m.CPU = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
		if strings.Contains(string(b), " hypervisor") {
			m.Virt = "virtual machine (hypervisor flag set)"
		}
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Version[:])
	}
	m.Preempt = preemptModel(m.Kernel)
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.Memory = fmt.Sprintf("%.1f GiB", float64(si.Totalram)*float64(si.Unit)/(1<<30))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	m.Foreign = foreignActivity()
	var tools []string
	for _, t := range [][]string{{"bpftrace", "--version"}, {"stress-ng", "--version"}} {
		if out, err := exec.Command(t[0], t[1:]...).Output(); err == nil {
			tools = append(tools, strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
		}
	}
	for _, pkg := range []string{"libbpf-tools", "rt-tests"} {
		if out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output(); err == nil {
			tools = append(tools, pkg+" "+string(out))
		}
	}
	m.Tools = strings.Join(tools, ", ")
	return m
}

// preemptModel reads the preemption model the kernel runs with.
func preemptModel(kernel string) string {
	if b, err := os.ReadFile("/sys/kernel/debug/sched/preempt"); err == nil {
		return strings.TrimSpace(string(b)) + " (the active model is in parentheses)"
	}
	if out, err := exec.Command("dmesg").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if i := strings.Index(l, "Dynamic Preempt:"); i >= 0 {
				return "PREEMPT_DYNAMIC, boot model: " + strings.TrimSpace(l[i+len("Dynamic Preempt:"):])
			}
		}
	}
	switch {
	case strings.Contains(kernel, "PREEMPT_RT"):
		return "PREEMPT_RT"
	case strings.Contains(kernel, "PREEMPT_DYNAMIC"):
		return "PREEMPT_DYNAMIC (model not readable)"
	case strings.Contains(kernel, "PREEMPT"):
		return "PREEMPT"
	}
	return "none (voluntary or server)"
}

// foreignActivity tells whether others use the machine: BPF programs not
// ours and user-space real-time tasks at the start of the run.
func foreignActivity() string {
	progs := 0
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			break
		}
		progs++
		id = next
	}
	rt := 0
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+2:])
		// field 41 (policy) is index 38 after the comm; kernel threads have
		// flag PF_KTHREAD (0x00200000) in field 9.
		if len(f) > 38 && (f[38] == "1" || f[38] == "2") {
			var flags uint64
			fmt.Sscan(f[6], &flags) //nolint:errcheck // a malformed field leaves the zero value
			if flags&0x00200000 == 0 {
				rt++
			}
		}
	}
	return fmt.Sprintf("%d BPF programs already loaded, %d user-space real-time processes running", progs, rt)
}

func (m machine) tag() string {
	cpu := strings.ToLower(m.CPU)
	for _, junk := range []string{"(r)", "(tm)", "processor", "cpu", "@"} {
		cpu = strings.ReplaceAll(cpu, junk, " ")
	}
	f := strings.Fields(cpu)
	if len(f) > 3 {
		f = f[:3]
	}
	return fmt.Sprintf("%dcpu-%s", m.CPUs, strings.Join(f, "-"))
}

// ---- formatting ----

func ns(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ns", v)
}

func us(v float64) string { return fmt.Sprintf("%.1f us", v/1e3) }

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func mib(v float64) string {
	if v == 0 {
		return "-"
	}
	if v < 1<<20 {
		return fmt.Sprintf("%.0f KiB", v/1024)
	}
	return fmt.Sprintf("%.2f MiB", v/(1<<20))
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func spread(v []float64, f func(float64) string) string {
	if len(v) == 0 {
		return "-"
	}
	if len(v) == 1 {
		return f(v[0])
	}
	return fmt.Sprintf("%s (%s..%s)", f(median(v)), f(minf(v)), f(maxf(v)))
}

func (r *results) costRow(prefix string) *costRow {
	for _, c := range r.Cost {
		if strings.HasPrefix(c.Name, prefix) {
			return c
		}
	}
	return nil
}

func (r *results) scaleRow(n int) *scaleRow { return r.scaleRowT(n, false) }

func (r *results) scaleRowT(n int, noTrace bool) *scaleRow {
	for _, s := range r.Scale {
		if s.Tracked == n && s.NoTrace == noTrace {
			return s
		}
	}
	return nil
}

// memory extrapolates a scaling row's kernel memory to cpus CPUs: the
// per-CPU maps (per-CPU arrays) scale with the CPU count; the flight
// recorder's default depth per CPU also depends on it
// (engine.DefaultFlightFor: 8192 events up to 2 CPUs, halved as they
// double), so its size is scaled by the total events at each count; the
// rest does not depend on the CPUs.
func (s *scaleRow) memory(cpus, have int) (total, perCPU float64) {
	if len(s.Memlock) == 0 {
		return 0, 0
	}
	var flight float64
	for _, m := range s.Maps {
		switch {
		case m.Name == "flight":
			flight = float64(m.Memlock)
		case m.PerCPU:
			perCPU += float64(m.Memlock)
		}
	}
	base := median(s.Memlock) + float64(s.StorageB)
	events := func(n int) float64 { return float64(engine.DefaultFlightFor(n)) * float64(n) }
	total = base + perCPU*float64(cpus-have)/float64(have) + flight*(events(cpus)/events(have)-1)
	return total, (perCPU + flight) / float64(have)
}

func (r *results) markdown() string {
	var w strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&w, format, a...) }
	m := r.Machine
	p("# rtscope benchmark, %s\n\n", m.Date)
	p("Produced by `make bench`%s (bench/, %d repetition(s) per configuration, interleaved), in %v.\n\n",
		map[bool]string{true: " with BENCH_QUICK=1", false: ""}[r.Quick], r.Reps, r.Duration.Round(time.Second))
	p("rtscope under test: `%s`.\n\n", orDash(r.Version))
	p("## Machine\n\n| | |\n|---|---|\n")
	p("| CPU | %s, %d CPUs |\n| virtualisation | %s |\n| memory | %s |\n| kernel | %s |\n| preemption | %s |\n| tools | %s |\n| load at start | %s (load average); %s |\n\n",
		m.CPU, m.CPUs, orDash(m.Virt), m.Memory, m.Kernel, m.Preempt, m.Tools, m.Load, m.Foreign)
	if len(r.Errors) > 0 {
		p("**Errors:**\n\n")
		for _, e := range r.Errors {
			p("- %s\n", e)
		}
		p("\n")
	}
	r.headline(&w)
	r.details(&w)
	return w.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *results) headline(w *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("## Summary\n\n| # | figure | rtscope | against | ratio | target | met |\n|---|---|---|---|---|---|---|\n")
	none, floor, one, busy := r.costRow("no monitor"), r.costRow("floor"), r.costRow("rtscope, 1"), r.costRow("rtscope, the load")
	rq, bt := r.costRow("runqlat"), r.costRow("bpftrace")
	if one != nil && floor != nil {
		a, f := median(one.AvgNs), median(floor.AvgNs)
		p("| 1 | ns per program run, all hooks, 1 task tracked | %s | floor %s | %s | <= 2x floor | %s |\n", ns(a), ns(f), ratio(a, f), yes(a <= 2*f))
		if busy != nil { // -configs may leave it out
			a := median(busy.AvgNs)
			p("| 1 | ns per program run, all hooks, the load's tasks tracked | %s | floor %s | %s | <= 2.5x floor | %s |\n", ns(a), ns(f), ratio(a, f), yes(a <= 2.5*f))
		}
		// The clock floor: what timestamping each event costs before any
		// work (informative: the targets are on the empty-program floor).
		if cf := r.costRow("clock floor"); cf != nil {
			c := median(cf.AvgNs)
			p("| 1 | ns per program run, empty programs reading the clock once | %s | floor %s | %s | - | - |\n", ns(c), ns(f), ratio(c, f))
		}
		s1, sf := median(one.SwitchNs), median(floor.SwitchNs)
		p("| 1 | ns per sched_switch run, 1 task tracked | %s | floor %s | %s | <= 2x floor | %s |\n", ns(s1), ns(sf), ratio(s1, sf), yes(s1 <= 2*sf))
		if rq != nil && bt != nil {
			sr, sb := median(rq.SwitchNs), median(bt.SwitchNs)
			p("| 1 | ns per sched_switch run, vs peers | %s | runqlat %s, bpftrace %s | %s, %s | <= peers | %s |\n",
				ns(s1), ns(sr), ns(sb), ratio(s1, sr), ratio(s1, sb), yes(s1 <= sr && s1 <= sb))
			pr, pb, p1 := median(rq.PerSwitchNs), median(bt.PerSwitchNs), median(one.PerSwitchNs)
			p("| 1 | BPF ns per context switch (every hook) | %s | runqlat %s, bpftrace %s | %s, %s | <= peers | %s |\n",
				ns(p1), ns(pr), ns(pb), ratio(p1, pr), ratio(p1, pb), yes(p1 <= pr && p1 <= pb))
		}
		if none != nil {
			o0, o1 := median(none.OpsPerS), median(one.OpsPerS)
			p("| 1 | stress-ng --switch throughput, 1 task tracked | %.0f ops/s | no monitor %.0f ops/s | %s | - | - |\n", o1, o0, ratio(o1, o0))
		}
		p("| 1 | origin design, per probe (paper, Pi 4) | %s | origin 463 ns (0 PIDs), 997 ns (3 PIDs) | %s | - | - |\n", ns(median(one.AvgNs)), ratio(median(one.AvgNs), originAvg3))
	}
	if t := r.Timed; t != nil {
		p("| 1 | max ns in one program run (instrumented build, %s) | %s | floor %s | %s | - | - |\n", t.Where, ns(t.RtsMax), ns(t.FloorMax), ratio(t.RtsMax, t.FloorMax))
	}
	if s1, s1000 := r.scaleRow(1), r.scaleRow(1000); s1 != nil && s1000 != nil && len(s1.AvgNs) > 0 {
		a, b := median(s1.AvgNs), median(s1000.AvgNs)
		g := 100 * (b - a) / a
		p("| 2 | ns per program run, 1 -> 1000 tracked threads | %s -> %s | origin +175 ns per PID | %+.1f%% | <= +10%% | %s |\n", ns(a), ns(b), g, yes(g <= 10))
	}
	if s1, s1000 := r.scaleRowT(1, true), r.scaleRowT(1000, true); s1 != nil && s1000 != nil && len(s1.AvgNs) > 0 {
		a, b := median(s1.AvgNs), median(s1000.AvgNs)
		g := 100 * (b - a) / a
		p("| 2 | the same, --no-trace (no flight recorder, no trace cutting) | %s -> %s | origin +175 ns per PID | %+.1f%% | <= +10%% | %s |\n", ns(a), ns(b), g, yes(g <= 10))
	}
	if s := r.scaleRowT(1000, false); s != nil && len(s.CPUPct) > 0 {
		// Issue 12 item 3: user space scales with what users read, not
		// with the number of tasks.
		c, rss := median(s.CPUPct), median(s.RSS)
		p("| 3 | rtscope process CPU, 1000 tracked threads with traces, first window (their first maxima) | %s | one CPU | - | <= 5%% | %s |\n", pct(c), yes(c <= 5))
		if len(s.SteadyPct) > 0 {
			c := median(s.SteadyPct)
			p("| 3 | the same, the window after (steady) | %s | one CPU | - | <= 5%% | %s |\n", pct(c), yes(c <= 5))
		}
		p("| 3 | RSS, 1000 tracked threads with traces | %s | - | - | <= 100 MiB | %s |\n", mib(rss), yes(rss <= 100<<20))
		if len(s.StopS) > 0 {
			st := median(s.StopS)
			p("| 3 | watch stop (SIGINT to exit), 1000 tracked threads | %s | - | - | <= 500 ms | %s |\n", ms(st), yes(st <= 500e6))
		}
		if len(s.Lost) > 0 {
			var tr []float64
			for _, l := range s.Lost {
				tr = append(tr, float64(l.TracesTruncated))
			}
			t := median(tr)
			p("| 3 | truncated traces, 1000 tracked threads waking once a second | %.0f | - | - | 0 | %s |\n", t, yes(t == 0))
		}
	}
	if len(r.Cyc) >= 2 {
		base := r.Cyc[0]
		ba := medianOf(base.Runs, func(c cyclicResult) float64 { return c.Avg })
		// The target is on the shift of the average; the host's noise
		// between runs is larger than it here, so the verdict comes from
		// the paired shift's interval, not from one difference of medians.
		for _, c := range r.Cyc[1:] {
			a := medianOf(c.Runs, func(c cyclicResult) float64 { return c.Avg })
			s := shiftOf(base.Runs, c.Runs, func(c cyclicResult) float64 { return c.Avg })
			p("| 3 | cyclictest avg, %s | %s | no monitor %s | %s | <= +0.5 us (origin +1.7 us) | %s |\n", c.Name, us(a), us(ba), s, s.verdict(500))
		}
		bm := medianOf(base.Runs, func(c cyclicResult) float64 { return c.P50 })
		for _, c := range r.Cyc[1:] {
			m := medianOf(c.Runs, func(c cyclicResult) float64 { return c.P50 })
			p("| 3 | cyclictest median, %s | %s | no monitor %s | %+.1f us | - | - |\n", c.Name, us(m), us(bm), (m-bm)/1e3)
		}
		b99s := valuesOf(base.Runs, func(c cyclicResult) float64 { return c.P99 })
		b99, top := median(b99s), maxf(b99s)
		for _, c := range r.Cyc[1:] {
			m := medianOf(c.Runs, func(c cyclicResult) float64 { return c.P99 })
			p("| 3 | cyclictest p99, %s | %s | no monitor %s | %+.1f us | within no monitor's runs (<= %s) | %s |\n", c.Name, us(m), us(b99), (m-b99)/1e3, us(top), yes(m <= top))
		}
	}
	if s := r.scaleRow(100); s != nil && len(s.Memlock) > 0 {
		t4, _ := s.memory(4, r.Machine.CPUs)
		p("| 4 | kernel memory, 100 tracked, 4 CPUs (extrapolated) | %s | origin 18.5 MiB | %s | <= 2 MiB | %s |\n", mib(t4), ratio(t4, originMemBytes), yes(t4 <= 2<<20))
	}
	if len(r.Loss) >= 3 {
		d, s := r.Loss[1], r.Loss[2]
		var dl, sl uint64
		for _, l := range d.Lost {
			dl += l.total()
		}
		for _, l := range s.Lost {
			sl += l.TracesTruncated
		}
		p("| 5 | lost at %.0f context switches/s, defaults | %d | - | - | 0 | %s |\n", median(d.SwitchPerS), dl, yes(dl == 0))
		p("| 5 | truncated traces counted, --trace-events 64 | %d | - | - | > 0, counted | %s |\n", sl, yes(sl > 0))
	}
	if s := r.Start; s != nil {
		p("| 6 | start (load + attach + register %d threads) | %s | - | - | - | - |\n", s.Tracked,
			ms(median(s.Load)+median(s.Attach)+median(s.Scan)))
		p("| 6 | stop (detach and free) | %s | - | - | - | - |\n", ms(median(s.Close)))
	}
	for _, s := range r.Self {
		p("| 7 | longest on-CPU run of an rtscope thread, %s | %s | p50 %s, p99 %s of %d runs | - | - | - |\n", s.Name,
			us(float64(quantile(s.Runs, 1))), us(float64(quantile(s.Runs, 0.5))), us(float64(quantile(s.Runs, 0.99))), len(s.Runs))
		if s.Probe {
			p("| 7 | longest wait of a real-time task behind an rtscope thread on its CPU | %s | p50 %s, p99 %s of %d waits | - | - | - |\n",
				us(float64(quantile(s.HeldByMonitor, 1))), us(float64(quantile(s.HeldByMonitor, 0.5))), us(float64(quantile(s.HeldByMonitor, 0.99))), len(s.HeldByMonitor))
		}
	}
	p("\n")
}

func ms(v float64) string { return fmt.Sprintf("%.1f ms", v/1e6) }

func valuesOf(rs []cyclicResult, f func(cyclicResult) float64) []float64 {
	var v []float64
	for _, r := range rs {
		v = append(v, f(r))
	}
	return v
}

func medianOf(rs []cyclicResult, f func(cyclicResult) float64) float64 {
	return median(valuesOf(rs, f))
}

func (r *results) details(w *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	if len(r.Cost) > 0 {
		p("## 1. Cost per event\n\nLoad: `stress-ng --switch 2` for %v per repetition. Kernel BPF run-time statistics (`BPF_ENABLE_STATS`, i.e. `kernel.bpf_stats_enabled`, on for this phase only) of the monitor's own programs, found through its file descriptors. Figures: median over repetitions (min..max).\n\n", r.CostLoad)
		if r.Alt != "" {
			p("\"alt build\": %s, measured in the same interleaved run.\n\n", r.Alt)
		}
		p("| configuration | programs | ns per run (all) | ns per sched_switch run | BPF ns per context switch | runs/s | context switches/s | stress-ng ops/s | monitor process CPU |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, c := range r.Cost {
			p("| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", c.Name, c.Progs, spread(c.AvgNs, ns), spread(c.SwitchNs, ns),
				spread(c.PerSwitchNs, ns), spread(c.EventsPerS, count), spread(c.SwitchPerS, count), spread(c.OpsPerS, count), spread(c.CPUPct, pct))
		}
		p("\n")
		r.altPairs(p)
		for _, c := range r.Cost {
			if !(strings.HasPrefix(c.Name, "rtscope") || strings.HasPrefix(c.Name, "alt")) || len(c.PerProg) == 0 {
				continue
			}
			p("Per program, %s (all repetitions):\n\n| program | runs | ns per run | share of run time |\n|---|---|---|---|\n", c.Name)
			var ps []*ProgStat
			var total uint64
			for _, q := range c.PerProg {
				ps = append(ps, q)
				total += q.Runtime
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i].Runtime > ps[j].Runtime })
			for _, q := range ps {
				if q.Count == 0 {
					continue
				}
				p("| %s | %d | %.0f | %.1f%% |\n", q.Name, q.Count, float64(q.Runtime)/float64(q.Count), 100*float64(q.Runtime)/float64(total))
			}
			p("\n")
		}
	}
	if t := r.Timed; t != nil {
		t.markdown(w)
	}
	if len(r.Scale) > 0 {
		p("## 2. Scaling with tracked threads\n\nSame workload in every configuration: `stress-ng --switch 2` plus 1000 helper threads (1 + 9 + 90 + 900 in four processes) each waking once a second; only how many of them rtscope tracks changes (`--tid`). %v per window; the CPU is measured from the moment every task is tracked (the window holds their first maxima, each a window cut), and with 100 tracked or more over the window after too.\n\n", r.ScaleWindow)
		p("| tracked threads | ns per run (all) | ns per sched_switch run | rtscope process CPU | the window after | kernel memory (maps + programs) | + task storage (est.) | RSS | watch stop (final reports) | lost notices | truncated traces |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.Scale {
			name := fmt.Sprint(s.Tracked)
			if s.Tracked < 0 {
				name = "floor"
			}
			if s.NoTrace {
				name += ", --no-trace"
			}
			var ln, lt []float64
			for _, l := range s.Lost {
				ln = append(ln, float64(l.Notices))
				lt = append(lt, float64(l.TracesTruncated))
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, spread(s.AvgNs, ns), spread(s.SwitchNs, ns), spread(s.CPUPct, pct), spread(s.SteadyPct, pct),
				spread(s.Memlock, mib), mib(float64(s.StorageB)), spread(s.RSS, mib), stopText(s), spread(ln, count0), spread(lt, count0))
		}
		p("\nOrigin design (paper, Table 1): 463 ns per probe with nothing tracked, +175 ns per tracked PID (997 ns with 3): at 1000 PIDs that line would reach about 175 us per probe.\n\n")
	}
	if s := r.scaleRow(100); s != nil && len(s.Maps) > 0 {
		p("## 4. Memory\n\nKernel memory as the kernel reports it (`memlock` in the fdinfo of each map and program fd of the rtscope process, each map counted once by id), at 100 tracked threads on this %d-CPU machine:\n\n| map | type | memlock | scales with CPUs |\n|---|---|---|---|\n", r.Machine.CPUs)
		for _, m := range s.Maps {
			p("| %s | %v | %s | %s |\n", m.Name, m.Type, mib(float64(m.Memlock)), map[bool]string{true: "yes", false: "no"}[m.PerCPU])
		}
		p("| (programs) | | %s | no |\n| (task storage elements, estimated) | | %s | no |\n\n", mib(float64(s.ProgBytes)), mib(float64(s.StorageB)))
		have := r.Machine.CPUs
		p("| tracked | this machine (%d CPUs) | 4 CPUs (extrapolated) | 8 CPUs (extrapolated) | origin (any) | rtscope RSS |\n|---|---|---|---|---|---|\n", have)
		for _, n := range []int{1, 100, 1000} {
			if s := r.scaleRow(n); s != nil && len(s.Memlock) > 0 {
				t, _ := s.memory(have, have)
				t4, _ := s.memory(4, have)
				t8, _ := s.memory(8, have)
				p("| %d | %s | %s | %s | 18.5 MiB | %s |\n", n, mib(t), mib(t4), mib(t8), spread(s.RSS, mib))
			}
		}
		_, per := s.memory(have, have)
		p("\nExtrapolation: the maps whose size is proportional to the number of CPUs (per-CPU arrays, and the flight recorder, sized CPUs x depth x 48 bytes, its default depth 8192 up to 2 CPUs, 4096 on 3-4, 2048 from 5: engine.DefaultFlightFor) cost %s per CPU here; the other maps, the programs and the task storage do not depend on the CPU count. Task storage elements are charged by the kernel to each task, not to the map, so the map's figure leaves them out: they are estimated as (value size + 256 bytes) per tracked task.\n\n", mib(per))
	}
	if s := r.Start; s != nil {
		p("## 6. Start and stop\n\nIn-process (`internal/engine`), median (min..max) of %d runs; the task iterator registers the existing threads of a helper process (1000 periodic threads plus the Go runtime's own threads).\n\n| step | time |\n|---|---|\n", len(s.Load))
		p("| load (verify, create maps) | %s |\n| attach | %s |\n| register %d existing threads (iterator) | %s |\n| detach and free | %s |\n\n",
			spread(s.Load, ms), spread(s.Attach, ms), s.Tracked, spread(s.Scan, ms), spread(s.Close, ms))
		p("Kernel memory of the engine at the same moment: `engine.MemoryBytes()` says %d bytes; each map and program fd of the process counted once (fdinfo memlock, by id) gives %d bytes (difference %+d bytes: maps shared with the optional program collections are counted again by MemoryBytes). The tables here use the second figure.\n\n",
			s.MemoryBytes, s.Dedup, int64(s.MemoryBytes)-int64(s.Dedup))
	}
	if len(r.Loss) > 0 {
		p("## 5. Throughput and loss\n\nLoad: `stress-ng --switch %d` (the highest rate it reaches here), %v per run; rtscope tracks every stress-ng worker (`--comm stress-ng-switc`), traces on. Context switches counted by an empty sched_switch program attached for the window. Lost counters from rtscope's JSON report.\n\n", r.LossWorkers, r.LossLoad)
		p("| configuration | context switches/s | program runs/s (floor hooks) | stress-ng ops/s | rtscope ns per run | rtscope process CPU | lost (JSON) |\n|---|---|---|---|---|---|---|\n")
		for _, l := range r.Loss {
			var ls []string
			for _, x := range l.Lost {
				ls = append(ls, x.String())
			}
			p("| %s | %s | %s | %s | %s | %s | %s |\n", l.Name, spread(l.SwitchPerS, count), spread(l.EventsPerS, count), spread(l.OpsPerS, count),
				spread(l.AvgNs, ns), spread(l.CPUPct, pct), orDash(strings.Join(ls, "; ")))
		}
		p("\n")
	}
	if len(r.Cyc) > 0 {
		p("## 3. Impact on cyclictest\n\n`cyclictest -m -p 80 -i 1000 -a %d -t 1 -h 2000`, %v per run, %d run(s) per configuration, interleaved. A helper with 100 periodic threads (10 ms, SCHED_OTHER) runs in every configuration; the configurations differ only in what rtscope tracks and how (the floor: an empty BPF program on each of rtscope's hooks, the dispatch cost no program body can remove; the clock floor: the same programs reading CLOCK_MONOTONIC once, as every program that timestamps its event must; the last ones: without the flight recorder, the classic engine, rtscope's own threads on CPU 0). Kernel BPF run-time statistics are off in this phase, as users run. min: lowest of the runs; avg, p50 and p99 (from the 1 us histogram): median of the runs (lowest..highest run); max: highest of the runs. Medians, because a burst of foreign load on a shared machine spoils a run or two whatever the configuration.\n\n", r.CycCPU, r.CycDuration, r.CycReps)
		p("avg shift, paired: the median of each repetition's difference to the no-monitor run of the same repetition, with a distribution-free confidence interval (order statistics of the differences; its coverage in %%). The summary judges the target on it: met when the whole interval is within it, not resolved when the interval holds it.\n\n")
		p("| configuration | min | avg | p50 | p99 | max | avg vs no monitor | avg shift, paired | p50 vs no monitor | p99 vs no monitor |\n|---|---|---|---|---|---|---|---|---|---|\n")
		bm := medianOf(r.Cyc[0].Runs, func(c cyclicResult) float64 { return c.P50 })
		ba := medianOf(r.Cyc[0].Runs, func(c cyclicResult) float64 { return c.Avg })
		b99 := medianOf(r.Cyc[0].Runs, func(c cyclicResult) float64 { return c.P99 })
		for _, c := range r.Cyc {
			var mins, maxs []float64
			for _, x := range c.Runs {
				mins = append(mins, x.Min)
				maxs = append(maxs, x.Max)
			}
			a := medianOf(c.Runs, func(c cyclicResult) float64 { return c.Avg })
			m := medianOf(c.Runs, func(c cyclicResult) float64 { return c.P50 })
			q := medianOf(c.Runs, func(c cyclicResult) float64 { return c.P99 })
			paired := "-"
			if c != r.Cyc[0] {
				paired = shiftOf(r.Cyc[0].Runs, c.Runs, func(c cyclicResult) float64 { return c.Avg }).String()
			}
			p("| %s | %s | %s | %s | %s | %s | %+.1f us | %s | %+.1f us | %+.1f us |\n", c.Name, us(minf(mins)),
				spread(valuesOf(c.Runs, func(c cyclicResult) float64 { return c.Avg }), us),
				spread(valuesOf(c.Runs, func(c cyclicResult) float64 { return c.P50 }), us),
				spread(valuesOf(c.Runs, func(c cyclicResult) float64 { return c.P99 }), us), us(maxf(maxs)), (a-ba)/1e3, paired, (m-bm)/1e3, (q-b99)/1e3)
		}
		p("\nOrigin design (paper, Tables 2-3, Pi 4, 120 s): avg 6 us without the module, 7 with it loaded, 7.7 tracked (+1.7 us), 8 with 2-3 more PIDs tracked.\n\n")
	}
	r.ipiMarkdown(w)
	r.cycCostMarkdown(w)
	r.selfMarkdown(w)
}

func count(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

func stopText(s *scaleRow) string {
	t := spread(s.StopS, ms)
	if s.Killed > 0 {
		if len(s.StopS) == 0 {
			t = ""
		} else {
			t += "; "
		}
		t += fmt.Sprintf("%d run(s) not stopped 60 s after SIGINT (killed)", s.Killed)
	}
	return t
}

func count0(v float64) string { return fmt.Sprintf("%.0f", v) }

func pct(v float64) string { return fmt.Sprintf("%.1f%%", v) }

var _ = bufio.NewScanner

// altPairs prints each configuration against its alt build twin ("rtscope,
// X" and "alt build, X"), repetition by repetition: the two ran in the
// same repetition, minutes apart at most, so their ratio leaves out the
// drift of a shared machine between repetitions, which moved the medians
// of the same two builds by 5-7 points from one run to the next here.
func (r *results) altPairs(p func(string, ...any)) {
	if r.Alt == "" {
		return
	}
	var rows []string
	for _, c := range r.Cost {
		if !strings.HasPrefix(c.Name, "rtscope") {
			continue
		}
		i := slices.IndexFunc(r.Cost, func(a *costRow) bool { return a.Name == "alt build"+strings.TrimPrefix(c.Name, "rtscope") })
		if i < 0 {
			continue
		}
		alt := r.Cost[i]
		ctx, sw := pairedRatios(c.PerSwitchNs, alt.PerSwitchNs), pairedRatios(c.SwitchNs, alt.SwitchNs)
		if len(ctx) == 0 {
			continue
		}
		rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s |\n", c.Name, len(ctx),
			spread(ctx, change), spread(sw, change)))
	}
	if len(rows) == 0 {
		return
	}
	p("This build against the alt build, repetition by repetition (each ratio of two runs of the same repetition; median (min..max)):\n\n")
	p("| configuration | repetitions | BPF ns per context switch | ns per sched_switch run |\n|---|---|---|---|\n")
	for _, row := range rows {
		p("%s", row)
	}
	p("\n")
}

// pairedRatios are a[i] / b[i] over the repetitions both have.
func pairedRatios(a, b []float64) []float64 {
	var out []float64
	for i := range min(len(a), len(b)) {
		if b[i] > 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// change is a ratio as a signed change: 1.119 is "+11.9%".
func change(ratio float64) string { return fmt.Sprintf("%+.1f%%", 100*(ratio-1)) }
