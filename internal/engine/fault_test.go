package engine

// BPF logic tests of page faults, memory locking and sleep reasons: the
// twins run the engine's own code (task_logic.bpf.h, sleep_reason.bpf.h)
// under BPF_PROG_TEST_RUN.

import (
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/rtscope/rtscope/internal/ksym"
)

// twinFlight loads twins with a small flight recorder, to read its events.
func twinFlight(t *testing.T, slots uint32, set map[string]any) *twinObjects {
	t.Helper()
	spec, err := loadTwinVariant()
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{"trace_enabled": true, "flight_per_cpu": slots}
	for k, v := range set {
		vars[k] = v
	}
	for k, v := range vars {
		if err := spec.Variables[k].Set(v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	spec.Maps["flight"].MaxEntries = slots
	var objs twinObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatalf("loading twins: %v", err)
	}
	t.Cleanup(func() { objs.Close() })
	return &objs
}

// onCPU0 runs a twin on CPU 0, whose flight slots the test reads.
func onCPU0(t *testing.T, p *ebpf.Program, args ...uint64) uint32 {
	t.Helper()
	ret, err := p.Run(&ebpf.RunOptions{Context: args, CPU: 0, Flags: 1 /* BPF_F_TEST_RUN_ON_CPU */})
	if err != nil {
		t.Fatalf("test run: %v", err)
	}
	return ret
}

func flightEvents(t *testing.T, objs *twinObjects, slots uint32, typ uint8) []Event {
	t.Helper()
	var got []Event
	for i := uint32(0); i < slots; i++ {
		var e Event
		if err := objs.Flight.Lookup(i, &e); err != nil {
			t.Fatal(err)
		}
		if e.Type == typ {
			got = append(got, e)
		}
	}
	return got
}

// Faults are the growth of the task's counters between switch-outs: the
// totals reach the hygiene counters, and only runs with faults leave an
// event, which carries the run's start.
func TestTwinPageFaults(t *testing.T) {
	const slots = 64
	objs := twinFlight(t, slots, nil)
	if ret := onCPU0(t, objs.TestTrack, 100, 100, 1, 0); ret != 0 {
		t.Fatalf("track: %d", int32(ret))
	}
	// Tracked with 50 minor and 2 major faults already taken (the baseline).
	onCPU0(t, objs.TestFaultsBase, 100, 50, 2)
	run := func(in, out, minFlt, majFlt uint64) {
		onCPU0(t, objs.TestSwitch, in, 0, idle, 100, 0, 0)
		onCPU0(t, objs.TestFaults, out, 0, 100, minFlt, majFlt)
		onCPU0(t, objs.TestSwitch, out, 0, 100, idle, 1, 0)
	}
	run(1_000, 2_000, 80, 2)   // 30 minor
	run(3_000, 4_000, 80, 2)   // none: no event
	run(5_000, 6_000, 81, 5)   // 1 minor, 3 major
	run(7_000, 8_000, 81, 5)   // none
	run(9_000, 9_500, 60, 1)   // counters lower (cannot happen): no negative delta
	run(10_000, 11_000, 70, 1) // from the new baseline: 10 minor
	id := uint64(onCPU0(t, objs.TestId, 100))
	var s bpfRtsTaskStats
	if err := objs.Stats.Lookup(id, &s); err != nil {
		t.Fatal(err)
	}
	if minor, major := s.Hygiene[HygieneMinorFaults], s.Hygiene[HygieneMajorFaults]; minor != 41 || major != 3 {
		t.Errorf("hygiene minor %d major %d, want 41 and 3", minor, major)
	}
	got := flightEvents(t, objs, slots, EventFaults)
	type fe struct{ ts, tid, minor, major, since uint64 }
	want := []fe{{2_000, 100, 30, 0, 1_000}, {6_000, 100, 1, 3, 5_000}, {11_000, 100, 10, 0, 10_000}}
	if len(got) != len(want) {
		t.Fatalf("%d fault events, want %d: %+v", len(got), len(want), got)
	}
	for i, e := range got {
		if g := (fe{e.Ts, uint64(e.A), uint64(e.B), EventY(&e), EventX(&e)}); g != want[i] {
			t.Errorf("fault event %d: %+v, want %+v", i, g, want[i])
		}
	}
}

// Memory locking is kept as last read: 1 while not locked, 0 once locked.
func TestTwinMemoryLocking(t *testing.T) {
	tw := newTwin(t, nil)
	tw.track(100, true, false)
	steps := []struct {
		locked bool
		want   uint64
	}{{false, 1}, {false, 1}, {true, 0}, {false, 1}}
	for i, st := range steps {
		tw.run(tw.objs.TestMem, 100, b2u(st.locked))
		if got := tw.stats(100).Hygiene[HygieneMemNotLocked]; got != st.want {
			t.Errorf("step %d (locked %v): memory_not_locked %d, want %d", i, st.locked, got, st.want)
		}
	}
}

// A synthetic sleep-reason table: [lo, hi) ranges and their classes.
func testSleepTable() *sleepTable {
	t := &sleepTable{}
	add := func(lo, hi uint64, c uint8) {
		t.lo[t.n], t.hi[t.n], t.class[t.n] = lo, hi, c
		t.n++
	}
	add(0x1000, 0x1100, SleepWait)      // __schedule
	add(0x1100, 0x1180, SleepWait)      // schedule
	add(0x2000, 0x2400, SleepPipeWrite) // pipe_write
	add(0x3000, 0x3200, SleepIO)        // io_schedule
	add(0x4000, 0x4800, SleepPageFault) // handle_mm_fault
	add(0x5000, 0x5100, SleepFutex)     // futex_wait
	add(0x6000, 0x6100, SleepMutex)     // __mutex_lock
	return t
}

// The reason is the first classified frame past the scheduling
// primitives; frames before them (the BPF program, the tracepoint) are
// skipped; a page fault deeper down overrides an I/O or lock wait; an
// unknown function past the primitives is the site of an "other" wait.
func TestTwinSleepReason(t *testing.T) {
	st := testSleepTable()
	vars := map[string]any{}
	st.vars(vars)
	objs := twinFlight(t, 64, vars)
	const bpfProg, tp, user = 0x9000, 0x9100, 0x7000 // no table entry
	cases := []struct {
		name   string
		frames []uint64
		reason uint8
		site   uint64
	}{
		{"pipe write", []uint64{bpfProg, tp, 0x1010, 0x1110, 0x2010, user}, SleepPipeWrite, 0x2010},
		{"futex before the primitives is not a reason", []uint64{0x5010, 0x1010, 0x1110, 0x8000, 0x5020}, SleepFutex, 0x5020},
		{"I/O inside a page fault", []uint64{bpfProg, 0x1010, 0x3010, 0x7777, 0x4010}, SleepPageFault, 0x4010},
		{"I/O alone", []uint64{bpfProg, 0x1010, 0x3010, 0x7777, 0x8888}, SleepIO, 0x3010},
		{"mutex inside a page fault", []uint64{0x1010, 0x6010, 0x4400}, SleepPageFault, 0x4400},
		{"pipe write is not overridden", []uint64{0x1010, 0x2010, 0x4010}, SleepPipeWrite, 0x2010},
		{"unknown function", []uint64{bpfProg, 0x1010, 0x1110, 0x8000, 0x8100}, SleepOther, 0x8000},
		{"no primitive", []uint64{bpfProg, tp, 0x8000}, SleepNone, 0},
		{"end of a range is outside it", []uint64{0x1010, 0x2400, 0x5000}, SleepFutex, 0x5000},
		{"below the table", []uint64{0x1010, 0x10, 0xfff}, SleepOther, 0x10},
	}
	for _, c := range cases {
		args := append([]uint64{uint64(len(c.frames))}, c.frames...)
		for len(args) < 11 {
			args = append(args, 0)
		}
		got := uint8(onCPU0(t, objs.TestSleepReason, args...))
		var site uint64
		if err := objs.TestSleepSite.Get(&site); err != nil {
			t.Fatal(err)
		}
		if got != c.reason || site != c.site {
			t.Errorf("%s: reason %d site %#x, want %d %#x", c.name, got, site, c.reason, c.site)
		}
	}
}

// sleepCost returns the median ns of one call of each test_sleep_cost
// variant (nothing, the sleep-reason walk, a full stack sample), timed
// inside the program over rounds of runs on one CPU.
func sleepCost(t testing.TB, runs int) [5]float64 {
	syms, err := ksym.Kernel()
	if err != nil {
		t.Fatalf("no kernel symbols (root reads /proc/kallsyms): %v", err)
	}
	vars := map[string]any{}
	newSleepTable(syms).vars(vars)
	spec, err := loadTwinVariant()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range vars {
		if err := spec.Variables[k].Set(v); err != nil {
			t.Fatal(err)
		}
	}
	var objs twinObjects
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		t.Fatalf("loading twins: %v", err)
	}
	defer objs.Close()
	var out [5]float64
	for v := range out {
		var rounds []float64
		for r := 0; r < 9; r++ {
			if err := objs.TestCostNs.Set(uint64(0)); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < runs; i++ {
				if _, err := objs.TestSleepCost.Run(&ebpf.RunOptions{Context: []uint64{uint64(v)}, CPU: 0, Flags: 1}); err != nil {
					t.Fatal(err)
				}
			}
			var ns uint64
			if err := objs.TestCostNs.Get(&ns); err != nil {
				t.Fatal(err)
			}
			rounds = append(rounds, float64(ns)/float64(runs))
		}
		out[v] = median(rounds)
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkSleepReasonCost reports what naming a blocking sleep costs the
// scheduler hot path (the 16-frame walk and the table search) against a
// full stack sample (bpf_get_stackid, 32 frames, hashed into the stack
// map), and the parts of the first, each the median over 9 rounds of b.N
// test runs (`go test -run X -bench SleepReasonCost -benchtime 2000x
// ./internal/engine/`). The test run's own stack is about 14 frames deep.
func BenchmarkSleepReasonCost(b *testing.B) {
	start := time.Now()
	c := sleepCost(b, max(b.N, 200))
	b.ReportMetric(c[1]-c[0], "ns/reason")
	b.ReportMetric(c[2]-c[0], "ns/stackid")
	b.ReportMetric(c[3]-c[0], "ns/walk4")
	b.ReportMetric(c[4]-c[0], "ns/search16")
	b.Logf("in %v: empty %.0f ns, reason %.0f ns, full stack %.0f ns, 4-frame walk %.0f ns, 16 searches %.0f ns",
		time.Since(start), c[0], c[1], c[2], c[3], c[4])
}
