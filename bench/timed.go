package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// benchTiming mirrors struct bench_timing (bench/bpf/timed.h).
type benchTiming struct {
	Max, Count, Sum uint64
	Ge              [10]uint64 // runs of at least 128 << i ns
}

func (t *benchTiming) add(o benchTiming) {
	if o.Max > t.Max {
		t.Max = o.Max
	}
	t.Count += o.Count
	t.Sum += o.Sum
	for i := range t.Ge {
		t.Ge[i] += o.Ge[i]
	}
}

// quantile is an upper bound of the q quantile: the smallest threshold
// that at most (1-q) of the runs reach.
func (t *benchTiming) quantile(q float64) float64 {
	if t.Count == 0 {
		return 0
	}
	allowed := (1 - q) * float64(t.Count)
	for i, n := range t.Ge {
		if float64(n) <= allowed {
			return float64(uint64(128) << i)
		}
	}
	return float64(t.Max)
}

// timedProg is one program's per-run timing.
type timedProg struct {
	Name string
	benchTiming
}

// timedResult: per-run maxima and tails from the instrumented builds.
type timedResult struct {
	Where             string
	RtsMax, FloorMax  float64
	Rts, Floor, Busy  []timedProg
	FloorAll, RtsAll  benchTiming
	BusyAll           benchTiming
	RtsName, BusyName string
}

// TimedFloor is the floor with the same timing record as timed.h, written
// in assembly: two bpf_ktime_get_ns() calls around nothing.
type TimedFloor struct {
	m     *ebpf.Map
	progs []*ebpf.Program
	links []link.Link
}

func NewTimedFloor() (*TimedFloor, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 104, MaxEntries: uint32(len(floorHooks))})
	if err != nil {
		return nil, err
	}
	f := &TimedFloor{m: m}
	for i, h := range floorHooks {
		insns := asm.Instructions{
			asm.FnKtimeGetNs.Call(),
			asm.Mov.Reg(asm.R6, asm.R0),
			asm.FnKtimeGetNs.Call(),
			asm.Sub.Reg(asm.R0, asm.R6),
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.StoreImm(asm.R10, -4, int64(i), asm.Word),
			asm.LoadMapPtr(asm.R1, m.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.JGE.Reg(asm.R1, asm.R7, "nomax"),
			asm.StoreMem(asm.R0, 0, asm.R7, asm.DWord),
			asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord).WithSymbol("nomax"),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.R0, 16, asm.DWord),
			asm.Add.Reg(asm.R1, asm.R7),
			asm.StoreMem(asm.R0, 16, asm.R1, asm.DWord),
		}
		for j := 0; j < 10; j++ {
			off := int16(24 + 8*j)
			insns = append(insns,
				asm.JLT.Imm(asm.R7, int32(128<<j), "out"),
				asm.LoadMem(asm.R1, asm.R0, off, asm.DWord),
				asm.Add.Imm(asm.R1, 1),
				asm.StoreMem(asm.R0, off, asm.R1, asm.DWord))
		}
		insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("out"), asm.Return())
		p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "tfloor_" + trunc(h, 8), Type: ebpf.Tracing,
			AttachType: ebpf.AttachTraceRawTp, AttachTo: h, Instructions: insns, License: "GPL"})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("timed floor program on %s: %w", h, err)
		}
		f.progs = append(f.progs, p)
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("attaching the timed floor on %s: %w", h, err)
		}
		f.links = append(f.links, l)
	}
	return f, nil
}

// Read returns the timing of each hook, summed over CPUs.
func (f *TimedFloor) Read() []timedProg {
	var out []timedProg
	for i, h := range floorHooks {
		out = append(out, timedProg{Name: h, benchTiming: readTiming(f.m, uint32(i))})
	}
	return out
}

func (f *TimedFloor) Close() {
	for _, l := range f.links {
		l.Close()
	}
	for _, p := range f.progs {
		p.Close()
	}
	f.m.Close()
}

func readTiming(m *ebpf.Map, key uint32) benchTiming {
	var per []benchTiming
	var t benchTiming
	if err := m.Lookup(key, &per); err == nil {
		for _, x := range per {
			t.add(x)
		}
	}
	return t
}

// readTimedProcess reads bench_timed of an instrumented rtscope process;
// keys are source lines of src (the instrumented copy of rtscope.bpf.c),
// named after the BPF_PROG at or before them.
func readTimedProcess(o *Objects, src string) ([]timedProg, error) {
	var m *ebpf.Map
	for id := range o.Maps {
		mm, err := ebpf.NewMapFromID(ebpf.MapID(id))
		if err != nil {
			continue
		}
		if info, err := mm.Info(); err == nil && info.Name == "bench_timed" {
			m = mm
			break
		}
		mm.Close()
	}
	if m == nil {
		return nil, fmt.Errorf("the instrumented rtscope has no bench_timed map")
	}
	defer m.Close()
	names, err := progLines(src)
	if err != nil {
		return nil, err
	}
	var out []timedProg
	for _, l := range names {
		t := readTiming(m, uint32(l.line))
		if t.Count > 0 {
			out = append(out, timedProg{Name: l.name, benchTiming: t})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Sum > out[j].Sum })
	return out, nil
}

type progLine struct {
	line int
	name string
}

var bpfProgRe = regexp.MustCompile(`BPF_PROG\((\w+)`)

// progLines lists the BPF_PROG lines of src. A BPF_PROG spanning several
// lines may report any of them as __LINE__: each program owns the lines up
// to the next one's.
func progLines(src string) ([]progLine, error) {
	fh, err := os.Open(src)
	if err != nil {
		return nil, err
	}
	defer fh.Close() //nolint:errcheck // read-only
	var out []progLine
	sc := bufio.NewScanner(fh)
	n := 0
	var cur string
	for sc.Scan() {
		n++
		if m := bpfProgRe.FindStringSubmatch(sc.Text()); m != nil && !strings.HasPrefix(strings.TrimSpace(sc.Text()), "#define") {
			cur = m[1]
			out = append(out, progLine{n, cur})
			// The continuation lines of the same invocation.
			for k := 1; k <= 3; k++ {
				out = append(out, progLine{n + k, cur})
			}
		}
	}
	return out, sc.Err()
}

func sumTiming(ps []timedProg) benchTiming {
	var t benchTiming
	for _, p := range ps {
		t.add(p.benchTiming)
	}
	return t
}

func (t *timedResult) markdown(w *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("### Maximum and tail per run\n\nKernel BPF statistics have no maximum. An instrumented copy of rtscope (`bench/bpf/timed.h` wraps every program with two `bpf_ktime_get_ns()` calls) and an instrumented floor (the same record, in assembly, around nothing) run under the same load; %s. Each run's time includes whatever interrupts it (hard IRQs with their own programs, and on a virtual machine the host taking the vCPU away). p99 and p99.9 are upper bounds: the lowest power-of-two threshold (from 128 ns) that at most 1%% (0.1%%) of the runs reach; with too few runs, the maximum.\n\n", t.Where)
	p("| configuration | runs | avg | p99 < | p99.9 < | max |\n|---|---|---|---|---|---|\n")
	row := func(name string, a benchTiming) {
		if a.Count == 0 {
			return
		}
		p("| %s | %d | %s | %s | %s | %s |\n", name, a.Count, ns(float64(a.Sum)/float64(a.Count)), ns(a.quantile(0.99)), ns(a.quantile(0.999)), ns(float64(a.Max)))
	}
	row("floor, instrumented (all hooks)", t.FloorAll)
	row(t.RtsName+", instrumented (all programs)", t.RtsAll)
	row(t.BusyName+", instrumented (all programs)", t.BusyAll)
	p("\n")
	for _, set := range []struct {
		name string
		ps   []timedProg
	}{{t.RtsName, t.Rts}, {t.BusyName, t.Busy}} {
		if len(set.ps) == 0 {
			continue
		}
		p("Per program, %s, instrumented:\n\n| program | runs | avg | p99 < | p99.9 < | max |\n|---|---|---|---|---|---|\n", set.name)
		for _, x := range set.ps {
			a := x.benchTiming
			p("| %s | %d | %s | %s | %s | %s |\n", x.Name, a.Count, ns(float64(a.Sum)/float64(a.Count)), ns(a.quantile(0.99)), ns(a.quantile(0.999)), ns(float64(a.Max)))
		}
		p("\n")
	}
}
