package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The IPI loads' threads' names (comm): the one-way loads' spinner is the
// receiving "loop" that watch --ipi tracks, the two-way load's peers (each
// sends and receives) are tracked both.
const (
	ipiSpinnerComm = "ipi-spinner"
	ipiSenderComm  = "ipi-sender"
	ipiPeerComm    = "ipi-peer"
)

// ipiRow is one configuration of the ipi phase, over its repetitions.
type ipiRow struct {
	Load        string // ipiLoads
	Name        string
	OpsPerS     []float64 // the load's operations (mprotect pairs, membarrier calls, perf ioctls) per second
	SliceP90    []float64 // the 90th percentile of the load's 20 ms slices' ops a second (ipiSlice)
	OpsPerCPUS  []float64 // the load's ops per second its sending threads were on their CPUs
	IPIPerS     []float64 // call-function IPIs received a second, all CPUs (/proc/interrupts CAL)
	BPFNsPerOp  []float64 // every program's run time per op of the load
	BPFNsPerIPI []float64 // every program's run time per IPI received
	CPUPct      []float64 // the monitor's user-space process, % of one CPU
	PerProg     map[string]*ProgStat
}

// ipiLoads are the IPI loads (bench ipiload MODE, ipiload.go): TLB
// shootdowns from mprotect pairs, the realistic one, and membarrier's
// function calls, both one-way to a spinner; perfcall's function calls
// both ways, the one that reaches 100k IPIs/s here.
var ipiLoads = []string{"mprotect", "membarrier", "perfcall"}

// phaseIPI: the IPI hooks' cost (watch --ipi, both engines, and the
// isolation command) under IPI loads as fast as the machine sends them: a
// thread of the load on CPU 0 sends CPU 1 IPIs in a loop while another
// thread of its process spins on CPU 1 (so that CPU 1 runs the process's
// mm), each one waited for by the sender. Rates from /proc/interrupts (CAL
// on CPU 1), program cost from the kernel's BPF statistics, and the load's
// own throughput with and without.
func (b *bench) phaseIPI() error {
	if runtime.NumCPU() < 2 {
		return fmt.Errorf("the ipi phase needs 2 CPUs")
	}
	load := 5 * time.Second
	if b.quick {
		load = 3 * time.Second
	}
	b.res.IPILoad = load
	spin := []string{"--comm", ipiSpinnerComm + "," + ipiPeerComm}
	cfgs := b.selected([]monitor{
		{name: "no monitor", kind: "none"},
		{name: "rtscope watch, the load's threads tracked (no --ipi)", kind: "rtscope", args: spin, expect: 0},
		{name: "rtscope watch --ipi, the load's threads tracked", kind: "rtscope", args: append([]string{"--ipi"}, spin...), expect: 0},
		{name: "rtscope watch --ipi --engine classic, the load's threads tracked", kind: "rtscope",
			args: append([]string{"--ipi", "--engine", "classic"}, spin...), expect: 0},
		{name: "rtscope isolation -c 1", kind: "rtscope", sub: "isolation", args: []string{"-c", "1", "-d", "1h"}, expect: -1, progs: 10},
	})
	var rows []*ipiRow
	var mons []monitor
	loads := ipiLoads
	if len(b.ipiLoads) > 0 {
		loads = b.ipiLoads
	}
	for _, l := range loads {
		for _, c := range cfgs {
			rows = append(rows, &ipiRow{Load: l, Name: c.name, PerProg: map[string]*ProgStat{}})
			mons = append(mons, c)
		}
	}
	for rep := 0; rep < b.reps; rep++ {
		for _, i := range runOrder(rep, len(rows)) {
			if err := b.ipiRun(mons[i], rows[i], load); err != nil {
				return err
			}
			b.logf("ipi %-10s %-58s rep %d: %.0f ops/s (slices' p90 %.0f, per CPU second %.0f), %.0f IPIs/s received, %.0f BPF ns/IPI",
				rows[i].Load, rows[i].Name, rep+1, last(rows[i].OpsPerS), last(rows[i].SliceP90), last(rows[i].OpsPerCPUS),
				last(rows[i].IPIPerS), last(rows[i].BPFNsPerIPI))
		}
	}
	b.res.IPI = rows
	return nil
}

// ipiRun measures one repetition of configuration c.
func (b *bench) ipiRun(c monitor, row *ipiRow, load time.Duration) error {
	r, err := b.startMonitor(c)
	if err != nil {
		return err
	}
	var lr ipiLoadResult
	var cal0, cal1 uint64
	w, err := b.measure(r, 0, func() error {
		if cal0, err = callIPIs(); err != nil {
			return err
		}
		lr, err = b.ipiLoad(row.Load, load)
		if err != nil {
			return err
		}
		cal1, err = callIPIs()
		return err
	})
	_, serr := r.stop()
	if err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	ops := lr.OpsPerS
	row.OpsPerS = append(row.OpsPerS, ops)
	row.SliceP90 = append(row.SliceP90, lr.SliceP90)
	row.OpsPerCPUS = append(row.OpsPerCPUS, lr.OpsPerCPUS)
	row.IPIPerS = append(row.IPIPerS, float64(cal1-cal0)/w.seconds)
	row.CPUPct = append(row.CPUPct, 100*w.cpu.Seconds()/w.seconds)
	rt, _, _ := Sum(w.progs)
	if r.p != nil && ops > 0 {
		row.BPFNsPerOp = append(row.BPFNsPerOp, float64(rt)/(ops*w.seconds))
	}
	if r.p != nil && cal1 > cal0 {
		row.BPFNsPerIPI = append(row.BPFNsPerIPI, float64(rt)/float64(cal1-cal0))
	}
	for _, p := range w.progs {
		q := row.PerProg[p.Name]
		if q == nil {
			q = &ProgStat{Name: p.Name}
			row.PerProg[p.Name] = q
		}
		q.Runtime += p.Runtime
		q.Count += p.Count
	}
	return nil
}

// ipiLoadResult is what one run of the load process printed.
type ipiLoadResult struct {
	OpsPerS    float64 // over the run
	SliceP90   float64 // the 90th percentile of its slices' rates
	OpsPerCPUS float64 // ops per second of its sending threads' CPU time (0: not printed)
}

// ipiLoad runs the load process (bench ipiload) for d.
func (b *bench) ipiLoad(mode string, d time.Duration) (ipiLoadResult, error) {
	out, err := exec.Command(b.self, "ipiload", mode, d.String()).CombinedOutput()
	if err != nil {
		return ipiLoadResult{}, fmt.Errorf("ipiload: %v: %s", err, tail(string(out), 300))
	}
	return parseIPILoad(out)
}

// parseIPILoad reads the load's lines "slice-p90 R", "cpu-seconds C" and,
// last, "ops N seconds S".
func parseIPILoad(out []byte) (ipiLoadResult, error) {
	var r ipiLoadResult
	var ops, secs, cpu float64
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, err := fmt.Sscanf(l, "slice-p90 %g", &r.SliceP90); err == nil {
			continue
		}
		if _, err := fmt.Sscanf(l, "cpu-seconds %g", &cpu); err == nil {
			continue
		}
		if _, err := fmt.Sscanf(l, "ops %g seconds %g", &ops, &secs); err == nil && secs > 0 {
			r.OpsPerS = ops / secs
			if cpu > 0 {
				r.OpsPerCPUS = ops / cpu
			}
			return r, nil
		}
	}
	return r, fmt.Errorf("ipiload printed no \"ops N seconds S\": %s", tail(string(out), 300))
}

// callIPIs is the count of call-function IPIs received, all CPUs, in
// /proc/interrupts (CAL; a TLB shootdown is in it, and again in TLB).
func callIPIs() (uint64, error) {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return 0, err
	}
	return sumInterrupts(b, "CAL")
}

// sumInterrupts is the row named name of /proc/interrupts summed over the
// CPUs of its header.
func sumInterrupts(text []byte, name string) (uint64, error) {
	var sum uint64
	cpus := strings.Count(strings.SplitN(string(text), "\n", 2)[0], "CPU")
	for cpu := 0; cpu < cpus; cpu++ {
		n, err := parseInterrupts(text, name, cpu)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	if cpus == 0 {
		return 0, fmt.Errorf("/proc/interrupts: no CPU in the header")
	}
	return sum, nil
}

// parseInterrupts finds the row named name (e.g. CAL) of /proc/interrupts
// and returns its count on cpu (the column of "CPU<cpu>" in the header).
func parseInterrupts(text []byte, name string, cpu int) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	col := -1
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if col < 0 {
			for i, h := range f {
				if h == fmt.Sprintf("CPU%d", cpu) {
					col = i
				}
			}
			if col < 0 {
				return 0, fmt.Errorf("/proc/interrupts: no column CPU%d", cpu)
			}
			continue
		}
		if len(f) > col+1 && f[0] == name+":" {
			return strconv.ParseUint(f[col+1], 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/interrupts: no row %s", name)
}

// ipiProgram says whether a program is one of the IPI hooks (send, csd,
// receipt entry and exit), for the per-program table.
func ipiProgram(name string) bool {
	return strings.HasPrefix(name, "on_ipi_") || name == "on_csd_queue_cpu"
}

func (r *results) ipiMarkdown(w *strings.Builder) {
	if len(r.IPI) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("## IPI hooks under an IPI load\n\nLoad: `bench ipiload MODE %v` per repetition. One-way: a thread on CPU 0 sends IPIs to CPU 1, "+
		"where a thread of the same process spins, each one waited for: `mprotect` write-protects and unprotects a page of the process "+
		"in a loop (a TLB shootdown a pair), `membarrier` calls membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (a function call to CPU 1 "+
		"when the spinner runs there). Two-way: `perfcall`'s thread on each CPU disables and enables a software perf event bound to the "+
		"other CPU (a function-call IPI an ioctl, waited for, whatever the target runs). IPIs/s: call-function IPIs received, all CPUs "+
		"(`/proc/interrupts` CAL), over the window. Slices' p90: the 90th percentile of the load's ops a second over %v slices (the rate "+
		"while nothing else took its CPUs). Per CPU second: ops per second that the load's sending threads were on their CPUs "+
		"(their thread CPU clocks: what other tasks took of the two CPUs divided out). BPF ns: every program of the monitor, run time per operation of the load and per IPI "+
		"received. Median over repetitions (min..max).\n\n", r.IPILoad, ipiSlice)
	base := map[string]*ipiRow{}
	p("| load | configuration | ops/s | vs no monitor | slices' p90 ops/s | vs no monitor | ops per CPU second | vs no monitor | " +
		"IPIs/s received | BPF ns per op | BPF ns per IPI | monitor process CPU |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.IPI {
		if c.Name == "no monitor" {
			base[c.Load] = c
		}
	}
	vs := func(c *ipiRow, f func(*ipiRow) []float64) string {
		if base[c.Load] == nil {
			return "-"
		}
		return ratio(median(f(c)), median(f(base[c.Load])))
	}
	for _, c := range r.IPI {
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Load, c.Name,
			spread(c.OpsPerS, count), vs(c, func(c *ipiRow) []float64 { return c.OpsPerS }),
			spread(c.SliceP90, count), vs(c, func(c *ipiRow) []float64 { return c.SliceP90 }),
			spread(c.OpsPerCPUS, count), vs(c, func(c *ipiRow) []float64 { return c.OpsPerCPUS }),
			spread(c.IPIPerS, count), spread(c.BPFNsPerOp, ns), spread(c.BPFNsPerIPI, ns), spread(c.CPUPct, pct))
	}
	p("\n")
	r.ipiPerIPI(w)
	for _, c := range r.IPI {
		var ps []*ProgStat
		for _, q := range c.PerProg {
			if q.Count > 0 {
				ps = append(ps, q)
			}
		}
		if len(ps) == 0 {
			continue
		}
		// The IPI hooks first, by name; then the others, the costliest first.
		sort.Slice(ps, func(i, j int) bool {
			a, b := ps[i], ps[j]
			if ipiProgram(a.Name) != ipiProgram(b.Name) {
				return ipiProgram(a.Name)
			}
			if ipiProgram(a.Name) {
				return a.Name < b.Name
			}
			return a.Runtime > b.Runtime
		})
		p("Programs, %s, %s load (all repetitions; the IPI hooks first):\n\n| program | runs | runs/s | ns per run | ns per op of the load |\n|---|---|---|---|---|\n", c.Name, c.Load)
		secs := r.IPILoad.Seconds() * float64(len(c.OpsPerS))
		ops := median(c.OpsPerS) * secs
		for _, q := range ps {
			p("| %s | %d | %.0f | %.0f | %.0f |\n", q.Name, q.Count, float64(q.Count)/secs, float64(q.Runtime)/float64(q.Count), float64(q.Runtime)/ops)
		}
		p("\n")
	}
}

// ipiSplit adds up the IPI programs of a configuration: the send hooks'
// run time, the receipts' (entry and exit), and the receipts (entries).
func ipiSplit(progs map[string]*ProgStat) (sendNs, recvNs, receipts uint64) {
	for _, q := range progs {
		switch {
		case q.Name == "on_csd_queue_cpu" || q.Name == "on_ipi_send_cpu":
			sendNs += q.Runtime
		case ipiProgram(q.Name) && strings.HasSuffix(q.Name, "_entry"):
			recvNs += q.Runtime
			receipts += q.Count
		case ipiProgram(q.Name) && strings.HasSuffix(q.Name, "_exit"):
			recvNs += q.Runtime
		}
	}
	return sendNs, recvNs, receipts
}

// ipiPerIPI is the table of the IPI hooks' cost per IPI received, and what
// it would take of the sending and the receiving CPU at 100,000 IPIs a second.
func (r *results) ipiPerIPI(w *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("Per IPI received (all repetitions): the send hooks (`csd_queue_cpu`, `ipi_send_cpu`) run on the sender, the receipt's entry " +
		"and exit on the receiver; at 100,000 IPIs a second each ns per IPI is 0.01%% of a CPU.\n\n" +
		"| load | configuration | receipts/s | send hooks, ns per IPI | entry + exit, ns per IPI | at 100k IPIs/s: sending CPU | receiving CPU |\n|---|---|---|---|---|---|---|\n")
	for _, c := range r.IPI {
		send, recv, n := ipiSplit(c.PerProg)
		if n == 0 {
			continue
		}
		secs := r.IPILoad.Seconds() * float64(len(c.OpsPerS))
		sn, rn := float64(send)/float64(n), float64(recv)/float64(n)
		p("| %s | %s | %s | %.0f | %.0f | %.1f%% | %.1f%% |\n", c.Load, c.Name, count(float64(n)/secs), sn, rn, sn/100, rn/100)
	}
	p("\n")
}
