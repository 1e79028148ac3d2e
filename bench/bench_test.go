package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rtscope/rtscope/internal/engine"
)

func TestReadCyclic(t *testing.T) {
	// cyclictest --json layout (rt-tests 2.x): 100 cycles, 98 at 10 us,
	// 1 at 50 us, 1 beyond the histogram (max 3000 us).
	js := `{"thread": {"0": {"histogram": {"10": 98, "50": 1}, "cycles": 100, "min": 10, "max": 3000, "avg": 40.5}}}`
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readCyclic(p)
	if err != nil {
		t.Fatal(err)
	}
	want := cyclicResult{Min: 10e3, Avg: 40.5e3, P50: 10e3, P99: 50e3, Max: 3000e3, Cycles: 100}
	if r != want {
		t.Fatalf("got %+v, want %+v", r, want)
	}
	// Fewer than 99% of the cycles in the histogram: p99 is the maximum.
	js = `{"thread": {"0": {"histogram": {"10": 97}, "cycles": 100, "min": 10, "max": 3000, "avg": 100}}}`
	os.WriteFile(p, []byte(js), 0o644)
	if r, _ := readCyclic(p); r.P99 != 3000e3 {
		t.Fatalf("p99 with overflows: got %v, want the maximum", r.P99)
	}
}

func TestSummaryLost(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte("report...\nrtscope watch: 3 task(s) reported, 5s; lost: 1 notices, 2 tasks not tracked, 3 stacks, 4 truncated traces\n"), 0o644)
	l := summaryLost(p)
	if l == nil || *l != (lost{Notices: 1, TasksNotTracked: 2, Stacks: 3, TracesTruncated: 4}) {
		t.Fatalf("got %+v", l)
	}
	os.WriteFile(p, []byte("no summary"), 0o644)
	if summaryLost(p) != nil {
		t.Fatal("a log without a summary gave counters")
	}
}

func TestQuantile(t *testing.T) {
	// 1000 runs: 20 of at least 128 ns, 2 of at least 256 ns, none longer.
	tm := benchTiming{Max: 300, Count: 1000, Ge: [10]uint64{20, 2}}
	if q := tm.quantile(0.99); q != 256 {
		t.Fatalf("p99: got %v, want 256 (20 runs >= 128 ns are more than 1%%)", q)
	}
	if q := tm.quantile(0.999); q != 512 {
		t.Fatalf("p99.9: got %v, want 512", q)
	}
	if q := (&benchTiming{}).quantile(0.99); q != 0 {
		t.Fatalf("no runs: got %v", q)
	}
}

func TestProgLines(t *testing.T) {
	src := "#include \"timed.h\"\nSEC(\"tp_btf/sched_switch\")\nint BPF_PROG(on_switch, bool preempt,\n\t     struct task_struct *prev)\n{\n}\nint BPF_PROG(on_wake)\n"
	p := filepath.Join(t.TempDir(), "x.bpf.c")
	os.WriteFile(p, []byte(src), 0o644)
	ls, err := progLines(p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]string{}
	for _, l := range ls {
		if _, ok := got[l.line]; !ok {
			got[l.line] = l.name
		}
	}
	// Either line of a two-line BPF_PROG names its program.
	if got[3] != "on_switch" || got[4] != "on_switch" || got[7] != "on_wake" {
		t.Fatalf("got %v", got)
	}
}

func TestDeltaAndSum(t *testing.T) {
	a := map[uint32]ProgStat{1: {ID: 1, Name: "x", Runtime: 100, Count: 10}}
	b := map[uint32]ProgStat{1: {ID: 1, Name: "x", Runtime: 400, Count: 13}, 2: {ID: 2, Name: "y", Runtime: 50, Count: 5}}
	d := Delta(a, b)
	if len(d) != 2 || d[0].Name != "x" || d[0].Runtime != 300 || d[0].Count != 3 {
		t.Fatalf("got %+v", d)
	}
	if rt, n, _ := Sum(d); rt != 350 || n != 8 {
		t.Fatalf("sum: %d ns, %d runs", rt, n)
	}
	if sw, ok := switchProg([]ProgStat{{Name: "on_sched_switch_legacy"}, {Name: "floor_sched_swi", Count: 1}}); !ok || sw.Name != "floor_sched_swi" {
		t.Fatalf("switchProg: %+v %v", sw, ok)
	}
}

// The monitor's runs come from context switches alone: a switch-in of one
// of its threads starts a run on that CPU, the next switch there ends it;
// a run whose start was not seen (or lost) is not counted.
func TestMonRuns(t *testing.T) {
	m := newMonRuns(2)
	m.mon[7], m.mon[8] = true, true
	sw := func(cpu int, ts uint64, prev, next, state uint32, preempt uint8) {
		m.feed(cpu, &engine.Event{Ts: ts, Type: engine.EventSwitch, A: prev, B: next, C: uint16(state), Flags: preempt})
	}
	sw(0, 100, 7, 1, 1, 0)                                            // 7 leaves CPU 0: its start was not seen
	sw(0, 200, 1, 7, 0, 0)                                            // 7 in
	m.feed(0, &engine.Event{Ts: 250, Type: engine.EventWakeup, A: 8}) // not a switch
	sw(1, 300, 2, 8, 0, 0)                                            // 8 in on CPU 1
	sw(0, 1200, 7, 8, 1, 0)                                           // 7 blocks after 1000 ns; 8 in on CPU 0 (it migrated)
	sw(1, 1300, 8, 2, 0, 1)                                           // 8 preempted on CPU 1 after 1000 ns
	m.gap(0)                                                          // CPU 0 lost events: 8's run there is unknown
	sw(0, 5000, 8, 3, 1, 0)
	want := []monRun{{TID: 7, Ns: 1000, CPU: 0, State: 1}, {TID: 8, Ns: 1000, CPU: 1, Preempted: true}}
	if len(m.runs) != len(want) {
		t.Fatalf("runs %+v, want %+v", m.runs, want)
	}
	for i := range want {
		if m.runs[i] != want[i] {
			t.Errorf("run %d: %+v, want %+v", i, m.runs[i], want[i])
		}
	}
	if q := quantile([]uint64{1, 2, 3, 4, 100}, 0.5); q != 3 {
		t.Errorf("p50 %d, want 3", q)
	}
	if q := quantile([]uint64{1, 2, 3, 4, 100}, 1); q != 100 {
		t.Errorf("max %d, want 100", q)
	}
}

// fakeRings is a flight recorder of depth 16 on one CPU, written by the test.
type fakeRings struct {
	head uint64
	ring [16]engine.Event
}

func (f *fakeRings) Heads() ([]uint64, error) { return []uint64{f.head}, nil }
func (f *fakeRings) FlightPerCPU() uint32     { return 16 }
func (f *fakeRings) FlightEvent(_ int, i uint32) engine.Event {
	return f.ring[i%16]
}

// write appends a switch prev -> next at ts.
func (f *fakeRings) write(ts uint64, prev, next uint32) {
	f.ring[f.head%16] = engine.Event{Ts: ts, Seq: uint32(f.head), Type: engine.EventSwitch, A: prev, B: next, C: 1}
	f.head++
}

// The reader feeds each event once, leaves the newest 4 slots (possibly
// still being written) for its next poll, and counts what the writer
// lapped, forgetting the run in progress there.
func TestFlightReader(t *testing.T) {
	f := &fakeRings{}
	r, err := newFlightReader(f)
	if err != nil {
		t.Fatal(err)
	}
	m := newMonRuns(1)
	m.mon[7] = true
	f.write(100, 1, 7)
	f.write(300, 7, 1) // a run of 200
	for i := uint64(0); i < 4; i++ {
		f.write(400+i, 1, 2)
	}
	if err := r.poll(m); err != nil {
		t.Fatal(err)
	}
	if err := r.poll(m); err != nil { // nothing new: nothing fed twice
		t.Fatal(err)
	}
	if len(m.runs) != 1 || m.runs[0].Ns != 200 || r.lost != 0 {
		t.Fatalf("runs %+v lost %d, want one of 200 ns, none lost", m.runs, r.lost)
	}
	f.write(1000, 2, 7) // 7 starts a run the writer will lap
	for i := uint64(0); i < 30; i++ {
		f.write(2000+i, 3, 4)
	}
	f.write(3000, 7, 3) // its end, with its start overwritten
	for i := uint64(0); i < 4; i++ {
		f.write(4000+i, 3, 4)
	}
	if err := r.poll(m); err != nil {
		t.Fatal(err)
	}
	if len(m.runs) != 1 {
		t.Errorf("a run whose start was overwritten was counted: %+v", m.runs)
	}
	// Read up to seq 2 before; the head is at 42 now: 2..27 are older than
	// depth - depth/8 = 14 short of it, skipped and counted.
	if r.lost != 26 {
		t.Errorf("lost %d, want 26", r.lost)
	}
	f.write(5000, 4, 7)
	f.write(5100, 7, 4) // a run of 100, read once the 4 newer slots follow
	if err := r.poll(m); err != nil {
		t.Fatal(err)
	}
	if len(m.runs) != 1 {
		t.Fatalf("a run in the newest 4 slots was read: %+v", m.runs)
	}
	for i := uint64(0); i < 4; i++ {
		f.write(6000+i, 4, 5)
	}
	if err := r.poll(m); err != nil {
		t.Fatal(err)
	}
	if len(m.runs) != 2 || m.runs[1].Ns != 100 || r.lost != 26 {
		t.Fatalf("runs %+v lost %d, want a second run of 100 ns, 26 lost", m.runs, r.lost)
	}
}

// A probe's wait runs from its wakeup to its switch-in on the same CPU,
// charged to the task it switched in from; a wakeup on another CPU's ring
// or one lost in a gap is not matched.
func TestMonRunsProbe(t *testing.T) {
	m := newMonRuns(2)
	m.mon[7] = true
	m.probe[9] = true
	ev := func(cpu int, ts uint64, typ uint8, a, b uint32) {
		m.feed(cpu, &engine.Event{Ts: ts, Type: typ, A: a, B: b})
	}
	ev(0, 100, engine.EventWakeup, 9, 0)
	ev(0, 130, engine.EventSwitch, 7, 9) // behind rtscope's thread 7: 30 ns
	ev(0, 1000, engine.EventWakeup, 9, 0)
	ev(0, 1005, engine.EventSwitch, 3, 9) // behind task 3: 5 ns
	ev(1, 2000, engine.EventWakeup, 9, 0) // woken from CPU 1's ring ...
	ev(0, 2100, engine.EventSwitch, 7, 9) // ... switched in on CPU 0: not matched
	ev(0, 3000, engine.EventWakeup, 9, 0)
	m.gap(0)
	ev(0, 3500, engine.EventSwitch, 7, 9) // its wakeup lost in the gap
	ev(0, 4000, engine.EventWakeup, 8, 0) // not the probe
	ev(0, 4100, engine.EventSwitch, 7, 8)
	if len(m.heldMon) != 1 || m.heldMon[0] != 30 || len(m.heldOther) != 1 || m.heldOther[0] != 5 {
		t.Fatalf("held by the monitor %v, by others %v; want [30] and [5]", m.heldMon, m.heldOther)
	}
}

// TestHeadlineSubsetOfConfigs: -configs may leave out any cost
// configuration; the summary states what was measured and nothing else.
func TestHeadlineSubsetOfConfigs(t *testing.T) {
	r := &results{Cost: []*costRow{
		{Name: "floor (empty programs, same hooks)", AvgNs: []float64{40}, SwitchNs: []float64{40}},
		{Name: "rtscope, 1 periodic task tracked", AvgNs: []float64{90}, SwitchNs: []float64{120}},
	}}
	var w strings.Builder
	r.headline(&w)
	got := w.String()
	if !strings.Contains(got, "| 1 | ns per program run, all hooks, 1 task tracked | 90 ns | floor 40 ns | 2.25x | <= 2x floor | **no** |") {
		t.Errorf("1-task row missing or wrong:\n%s", got)
	}
	if strings.Contains(got, "the load's tasks tracked") {
		t.Errorf("a row for a configuration that did not run:\n%s", got)
	}
	r.Cost = append(r.Cost, &costRow{Name: "rtscope, the load's tasks tracked", AvgNs: []float64{100}})
	w.Reset()
	r.headline(&w)
	if !strings.Contains(w.String(), "| 1 | ns per program run, all hooks, the load's tasks tracked | 100 ns | floor 40 ns | 2.50x | <= 2.5x floor | yes |") {
		t.Errorf("the load's row missing or wrong:\n%s", w.String())
	}
	if strings.Contains(w.String(), "reading the clock once") {
		t.Errorf("a clock floor row without the clock floor:\n%s", w.String())
	}
	// The clock floor is reported against the floor, and is not taken for it.
	r.Cost = append(r.Cost, &costRow{Name: clockFloorName, AvgNs: []float64{70}, SwitchNs: []float64{70}})
	w.Reset()
	r.headline(&w)
	for _, want := range []string{
		"| 1 | ns per program run, empty programs reading the clock once | 70 ns | floor 40 ns | 1.75x | - | - |",
		"| 1 | ns per program run, all hooks, 1 task tracked | 90 ns | floor 40 ns | 2.25x |",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("missing %q in:\n%s", want, w.String())
		}
	}
}

// TestCycCost: a cyclecost run is each program's run time and runs
// divided by cyclictest's cycles, and the section lists a configuration's
// programs by their time a cycle, the floor by its total only.
func TestCycCost(t *testing.T) {
	floor := &cycCostRow{Name: "floor (empty programs, same hooks)", Progs: map[string]*progCost{}}
	floor.add([]ProgStat{{Name: "floor_sched_swi", Runtime: 50_000, Count: 1000}}, 1000)
	c := &cycCostRow{Name: "cyclictest tracked", Progs: map[string]*progCost{}}
	c.add([]ProgStat{
		{Name: "on_sched_switch", Runtime: 2_000_000, Count: 5000}, // 5 a cycle, 400 ns each
		{Name: "on_sched_waking", Runtime: 1_000_000, Count: 1000}, // 1 a cycle, 1000 ns each
		{Name: "on_irq_entry"}, // never ran: left out
	}, 1000)
	if got := c.PerCycleNs; len(got) != 1 || got[0] != 3000 {
		t.Errorf("ns a cycle %v, want [3000]", got)
	}
	if len(c.Progs) != 2 || c.Progs["on_irq_entry"] != nil {
		t.Errorf("programs %v, want the two that ran", c.Progs)
	}
	clock := &cycCostRow{Name: clockFloorName, Progs: map[string]*progCost{}}
	clock.add([]ProgStat{{Name: "clock_sched_swi", Runtime: 90_000, Count: 1000}}, 1000)
	r := &results{CycCost: []*cycCostRow{floor, clock, c}, CycCostDuration: 5 * time.Second, Reps: 1}
	var w strings.Builder
	r.cycCostMarkdown(&w)
	got := w.String()
	for _, want := range []string{
		"| floor (empty programs, same hooks) | 50 ns |",
		"| " + clockFloorName + " | 90 ns |",
		"| cyclictest tracked | 3000 ns |",
		"| on_sched_switch | 5.00 | 400 ns | 2000 |\n| on_sched_waking | 1.00 | 1000 ns | 1000 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "floor_sched_swi") || strings.Contains(got, "clock_sched_swi") {
		t.Errorf("the floor's programs listed:\n%s", got)
	}
}

// TestShiftOf: a configuration's shift is the median of its runs'
// differences to the no-monitor run of the same repetition, bounded by
// order statistics of those differences, and the verdict on a target comes
// from the whole interval.
func TestShiftOf(t *testing.T) {
	if got, want := binomHalfCDF(8, 1), 9.0/256; math.Abs(got-want) > 1e-12 {
		t.Errorf("P(Bin(8, 1/2) <= 1) = %v, want %v", got, want)
	}
	runs := func(avgs ...float64) []cyclicResult {
		var rs []cyclicResult
		for _, a := range avgs {
			rs = append(rs, cyclicResult{Avg: a * 1e3})
		}
		return rs
	}
	avg := func(c cyclicResult) float64 { return c.Avg }
	// The host's noise moves each repetition by up to 30 us; each pair
	// differs by -1..+4 us.
	base := runs(10, 20, 10, 30, 10, 10, 40, 10)
	c := runs(11, 22, 9, 33, 10.5, 10.2, 44, 11.5)
	s := shiftOf(base, c, avg)
	if s.N != 8 || math.Abs(s.Median-1250) > 1e-6 || math.Abs(s.Lo-200) > 1e-6 || math.Abs(s.Hi-3000) > 1e-6 {
		t.Errorf("shift %+v, want median 1250 ns in 200..3000 over 8 pairs", s)
	}
	if math.Abs(s.Coverage-(1-2*9.0/256)) > 1e-12 {
		t.Errorf("coverage %v, want the 2nd..7th of 8 (92.97%%)", s.Coverage)
	}
	if got := s.String(); got != "+1.2 us (+0.2..+3.0, 93%)" {
		t.Errorf("String() = %q", got)
	}
	if v := s.verdict(500); !strings.HasPrefix(v, "not resolved") {
		t.Errorf("an interval holding the target: %q, want not resolved", v)
	}
	if v := s.verdict(3000); v != "yes" {
		t.Errorf("an interval within the target: %q, want yes", v)
	}
	if v := s.verdict(100); v != "**no**" {
		t.Errorf("an interval beyond the target: %q, want no", v)
	}
	// Four runs give no 90% interval: never met or missed on one median.
	few := shiftOf(base[:4], c[:4], avg)
	if few.Coverage != 0 || !strings.HasPrefix(few.verdict(1e9), "not resolved") {
		t.Errorf("4 pairs: %+v, verdict %q", few, few.verdict(1e9))
	}
	// Five give [lowest, highest] at 93.75%.
	five := shiftOf(base[:5], c[:5], avg)
	if five.Lo != -1000 || five.Hi != 3000 || math.Abs(five.Coverage-0.9375) > 1e-12 {
		t.Errorf("5 pairs: %+v", five)
	}

	// The summary judges the average on the interval and the p99 on the
	// no-monitor runs' highest.
	for i := range c {
		c[i].P99 = 50e3
		base[i].P99 = float64(30+i) * 1e3
	}
	r := &results{Cyc: []*cycRow{{Name: "no monitor", Runs: base}, {Name: "cyclictest tracked", Runs: c}}}
	var w strings.Builder
	r.headline(&w)
	for _, want := range []string{
		"| 3 | cyclictest avg, cyclictest tracked | 11.2 us | no monitor 10.0 us | +1.2 us (+0.2..+3.0, 93%) | <= +0.5 us (origin +1.7 us) | not resolved (the interval holds the target) |",
		"| 3 | cyclictest p99, cyclictest tracked | 50.0 us | no monitor 33.5 us | +16.5 us | within no monitor's runs (<= 37.0 us) | **no** |",
	} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("missing %q in:\n%s", want, w.String())
		}
	}
}

// TestSettle: a configuration starts settleTime after the previous monitor
// stopped (its stop records when), never sooner; the first one of a run
// does not wait.
func TestSettle(t *testing.T) {
	b := &bench{}
	t0 := time.Now()
	b.settle()
	if d := time.Since(t0); d >= settleTime {
		t.Errorf("the first configuration waited %v", d)
	}
	r := &running{b: b}
	if _, err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if b.lastStop.Before(t0) {
		t.Fatalf("stop did not record its time: %v", b.lastStop)
	}
	// Stopped settleTime - 200 ms ago: 200 ms left to wait.
	b.lastStop = time.Now().Add(-settleTime + 200*time.Millisecond)
	t0 = time.Now()
	b.settle()
	if d := time.Since(t0); d < 150*time.Millisecond {
		t.Errorf("waited %v of the 200 ms left", d)
	}
}

// Each configuration is set against its alt build twin repetition by
// repetition: the ratios of the pairs, not of the medians; a configuration
// with no twin (--no-trace) is left out.
func TestAltPairs(t *testing.T) {
	r := &results{Alt: "/tmp/old", Cost: []*costRow{
		{Name: "rtscope, the load's tasks tracked", PerSwitchNs: []float64{500, 560, 440}, SwitchNs: []float64{330, 360, 300}},
		{Name: "rtscope --no-trace, 1 periodic task tracked", PerSwitchNs: []float64{250}},
		{Name: "alt build, the load's tasks tracked", PerSwitchNs: []float64{450, 500, 400}, SwitchNs: []float64{300, 300, 300}},
	}}
	var b strings.Builder
	r.altPairs(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	out := b.String()
	t.Log(out)
	// 500/450 1.111, 560/500 1.12, 440/400 1.1: median +11.1%; switch 1.1, 1.2, 1.0.
	if !strings.Contains(out, "| rtscope, the load's tasks tracked | 3 | +11.1% (+10.0%..+12.0%) | +10.0% (+0.0%..+20.0%) |") {
		t.Errorf("pairs:\n%s", out)
	}
	if strings.Contains(out, "no-trace") {
		t.Errorf("a configuration with no twin is paired:\n%s", out)
	}
	r.Alt = ""
	b.Reset()
	r.altPairs(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	if b.Len() != 0 {
		t.Errorf("without an alt build: %q", b.String())
	}
}
