package isolation

import (
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

// twin is the hook bodies of isolation.bpf.h loaded as raw_tp programs
// (isolation_test.bpf.c), CPU 1 watched. BPF_PROG_TEST_RUN runs them on
// the test's CPU, whose per-CPU slot they write: the readers sum over CPUs.
type twin struct {
	t    *testing.T
	objs isotwinObjects
}

func newTwin(t *testing.T) *twin {
	t.Helper()
	return newTwinWith(t, nil)
}

// newTwinWith is newTwin with more load-time constants set.
func newTwinWith(t *testing.T, vars map[string]any) *twin {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("needs root to load BPF programs (CI runs as root)")
	}
	spec, err := loadIsotwin()
	if err != nil {
		t.Fatal(err)
	}
	var mask [maxCPUs / 64]uint64
	mask[0] = 1 << 1
	if err := spec.Variables["iso_cpus"].Set(mask); err != nil {
		t.Fatal(err)
	}
	for k, v := range vars {
		if err := spec.Variables[k].Set(v); err != nil {
			t.Fatal(err)
		}
	}
	tw := &twin{t: t}
	if err := spec.LoadAndAssign(&tw.objs, nil); err != nil {
		t.Fatalf("loading twins: %v", err)
	}
	t.Cleanup(func() { tw.objs.Close() })
	return tw
}

func (tw *twin) run(p *ebpf.Program, args ...uint64) {
	tw.t.Helper()
	if _, err := p.Run(&ebpf.RunOptions{Context: args}); err != nil {
		tw.t.Fatalf("test run: %v", err)
	}
}

// cpuState is the per-CPU state summed over CPUs (the counts only).
func (tw *twin) cpuState() isoIsoCpu {
	tw.t.Helper()
	var per []isoIsoCpu
	if err := tw.objs.IsoCpusState.Lookup(uint32(0), &per); err != nil {
		tw.t.Fatal(err)
	}
	var sum isoIsoCpu
	for _, c := range per {
		for v := range c.Softirqs {
			sum.Softirqs[v].Count += c.Softirqs[v].Count
			sum.Softirqs[v].Ns += c.Softirqs[v].Ns
			sum.SoftirqRaised[v] += c.SoftirqRaised[v]
		}
		sum.TickStopped += c.TickStopped
		sum.TickKept += c.TickKept
		for b := range c.TickDeps {
			sum.TickDeps[b] += c.TickDeps[b]
		}
	}
	return sum
}

// timeOf sums a per-CPU hash of iso_time's value at key (zero when absent).
func timeOf[K any](t *testing.T, m *ebpf.Map, key K) isoIsoTime {
	t.Helper()
	var per []isoIsoTime
	var sum isoIsoTime
	if err := m.Lookup(key, &per); err != nil {
		return sum
	}
	for _, v := range per {
		sum.Count += v.Count
		sum.Ns += v.Ns
		sum.MaxNs = max(sum.MaxNs, v.MaxNs)
	}
	return sum
}

// A hard IRQ counts on a watched CPU only, entry to exit, by irq number;
// an exit of another irq than the one entered counts nothing.
func TestTwinIRQ(t *testing.T) {
	tw := newTwin(t)
	p := tw.objs
	tw.run(p.TestIrqEntry, 1, 24, 1000)
	tw.run(p.TestIrqExit, 1, 24, 1600)
	tw.run(p.TestIrqEntry, 1, 24, 2000)
	tw.run(p.TestIrqExit, 1, 24, 2100)
	tw.run(p.TestIrqEntry, 0, 25, 3000) // CPU 0: not watched
	tw.run(p.TestIrqExit, 0, 25, 9000)
	tw.run(p.TestIrqEntry, 1, 26, 3000)
	tw.run(p.TestIrqExit, 1, 27, 9000) // not the irq entered
	if got := timeOf(t, p.IsoIrqs, uint32(24)); got != (isoIsoTime{Count: 2, Ns: 700, MaxNs: 600}) {
		t.Errorf("irq 24: %+v, want 2 handlers, 700 ns, worst 600", got)
	}
	for _, irq := range []uint32{25, 26, 27} {
		if got := timeOf(t, p.IsoIrqs, irq); got.Count != 0 {
			t.Errorf("irq %d counted %+v, want nothing", irq, got)
		}
	}
}

// Softirqs count by vector on a watched CPU, and their raises.
func TestTwinSoftirq(t *testing.T) {
	tw := newTwin(t)
	p := tw.objs
	tw.run(p.TestSoftirqRaise, 1, 9)
	tw.run(p.TestSoftirqEntry, 1, 9, 100)
	tw.run(p.TestSoftirqExit, 1, 9, 350)
	tw.run(p.TestSoftirqEntry, 0, 1, 100)
	tw.run(p.TestSoftirqExit, 0, 1, 350)
	tw.run(p.TestSoftirqEntry, 1, 12, 100) // beyond NR_SOFTIRQS
	tw.run(p.TestSoftirqExit, 1, 12, 350)
	c := tw.cpuState()
	if c.Softirqs[9].Count != 1 || c.Softirqs[9].Ns != 250 || c.SoftirqRaised[9] != 1 {
		t.Errorf("RCU: %+v raised %d, want 1 run of 250 ns raised once", c.Softirqs[9], c.SoftirqRaised[9])
	}
	if c.Softirqs[1].Count != 0 {
		t.Errorf("TIMER on CPU 0 (not watched) counted: %+v", c.Softirqs[1])
	}
}

// Work queued onto a watched CPU is counted by (function, queueing task);
// onto another CPU or an unbound pool (-1), not. Work run there is timed.
func TestTwinWork(t *testing.T) {
	tw := newTwin(t)
	p := tw.objs
	tw.run(p.TestQueueWork, 0, 1, 0xabc)
	tw.run(p.TestQueueWork, 0, 1, 0xabc)
	tw.run(p.TestQueueWork, 0, 0, 0xdef)
	tw.run(p.TestQueueWork, 0, ^uint64(0), 0xdef)
	var k isoIsoQueueKey
	var per []isoIsoQueued
	n, it := 0, p.IsoQueue.Iterate()
	for it.Next(&k, &per) {
		var count uint64
		for _, q := range per {
			count += q.Count
		}
		n++
		if k.Fn != 0xabc || k.Cpu != 1 || count != 2 {
			t.Errorf("queued %+v: %d times, want 0xabc onto CPU 1 twice", k, count)
		}
	}
	if n != 1 {
		t.Errorf("%d queue entries, want 1", n)
	}
	tw.run(p.TestWorkStart, 1, 0xabc, 1000)
	tw.run(p.TestWorkEnd, 1, 0xabc, 1400)
	if got := timeOf(t, p.IsoWorks, uint64(0xabc)); got != (isoIsoTime{Count: 1, Ns: 400, MaxNs: 400}) {
		t.Errorf("work 0xabc: %+v, want one run of 400 ns", got)
	}
}

// A task's run time on a watched CPU is from the switch before to its
// switch-out; the idle task (0) and the first switch seen count nothing.
func TestTwinSwitch(t *testing.T) {
	tw := newTwin(t)
	p := tw.objs
	tw.run(p.TestSwitch, 1, 42, 0, 4, 1000) // first seen: no start
	tw.run(p.TestSwitch, 1, 0, 0, 1, 1500)  // idle
	tw.run(p.TestSwitch, 1, 43, 1, 1, 1800)
	tw.run(p.TestSwitch, 1, 42, 0, 4, 2800)
	tw.run(p.TestSwitch, 0, 42, 0, 4, 9000) // CPU 0: not watched
	var per []isoIsoTask
	if err := p.IsoTasks.Lookup(uint32(43), &per); err != nil {
		t.Fatal(err)
	}
	var run isoIsoTime
	var kthread, nr uint32
	for _, v := range per {
		if v.Run.Count > 0 {
			run, kthread, nr = v.Run, v.Kthread, v.NrCpus
		}
	}
	if run != (isoIsoTime{Count: 1, Ns: 300, MaxNs: 300}) || kthread != 1 || nr != 1 {
		t.Errorf("task 43: %+v kthread %d on %d CPUs, want 300 ns, a per-CPU kernel thread", run, kthread, nr)
	}
	if err := p.IsoTasks.Lookup(uint32(42), &per); err != nil {
		t.Fatal(err)
	}
	var ns uint64
	for _, v := range per {
		ns += v.Run.Ns
	}
	if ns != 1000 {
		t.Errorf("task 42 ran %d ns, want 1000 (1800 -> 2800 on CPU 1)", ns)
	}
}

// tick_stop failures count by dependency bit; successes apart.
func TestTwinTick(t *testing.T) {
	tw := newTwin(t)
	p := tw.objs
	tw.run(p.TestTickStop, 1, 1, 0)
	tw.run(p.TestTickStop, 1, 0, 1<<2)
	tw.run(p.TestTickStop, 1, 0, 1<<2|1<<4)
	tw.run(p.TestTickStop, 0, 0, 1<<2)
	c := tw.cpuState()
	if c.TickStopped != 1 || c.TickKept != 2 || c.TickDeps[2] != 2 || c.TickDeps[4] != 1 {
		t.Errorf("tick: stopped %d kept %d deps %v, want 1, 2, SCHED 2 RCU 1", c.TickStopped, c.TickKept, c.TickDeps)
	}
}

// tickFn is the twin's tick hrtimer function (iso_fn_tick).
const tickFn = 0x71c

// newTimerTwin is newTwin with the tick's function set.
func newTimerTwin(t *testing.T) *twin {
	t.Helper()
	return newTwinWith(t, map[string]any{"iso_fn_tick": uint64(tickFn)})
}

// timerArms sums iso_timer_arms over CPUs, by key.
func (tw *twin) timerArms() map[isoIsoTimerKey]uint64 {
	tw.t.Helper()
	out := map[isoIsoTimerKey]uint64{}
	var k isoIsoTimerKey
	var per []isoIsoTimerArmed
	it := tw.objs.IsoTimerArms.Iterate()
	for it.Next(&k, &per) {
		for _, a := range per {
			out[k] += a.Count
		}
	}
	if err := it.Err(); err != nil {
		tw.t.Fatal(err)
	}
	return out
}

// A timer armed for a watched CPU counts on the arming CPU by (function,
// task, target, kind, arming CPU): from another CPU (remote) and from the
// CPU itself (local) alike, with no task inside a callback there; for a
// CPU not watched, or the tick's own hrtimer, not.
func TestTwinTimerStart(t *testing.T) {
	tw := newTimerTwin(t)
	p := tw.objs
	tw.run(p.TestTimerStart, 0, 1, 0xf00, 0) // remote hrtimer
	tw.run(p.TestTimerStart, 0, 1, 0xf00, 0)
	tw.run(p.TestTimerStart, 1, 1, 0xf00, 0) // local
	tw.run(p.TestTimerStart, 0, 1, 0xba2, 2) // remote wheel timer
	tw.run(p.TestTimerStart, 1, 0, 0xf00, 0) // onto CPU 0: not watched
	tw.run(p.TestTimerStart, 0, 1, tickFn, 0)
	tw.run(p.TestTimerEntry, 1, 0xc0, 0x6f, 2, 1, 1000) // in a wheel callback on CPU 1...
	tw.run(p.TestTimerStart, 1, 1, 0x6f, 2)             // ...a re-arm: no task
	tw.run(p.TestTimerExit, 1, 0xc0, 1, 1100)
	got := map[[3]uint64]uint64{}
	var inCallback uint64
	for k, n := range tw.timerArms() {
		if k.Cpu != 1 {
			t.Errorf("arming counted for CPU %d: %+v", k.Cpu, k)
		}
		got[[3]uint64{k.Fn, uint64(k.FromCpu), uint64(k.Kind)}] += n
		if k.Tid == 0 {
			inCallback += n
		}
	}
	if inCallback != 1 {
		t.Errorf("%d armings with no task, want 1 (the re-arm inside a callback)", inCallback)
	}
	want := map[[3]uint64]uint64{{0xf00, 0, 0}: 2, {0xf00, 1, 0}: 1, {0xba2, 0, 2}: 1, {0x6f, 1, 2}: 1}
	if len(got) != len(want) {
		t.Errorf("armings %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("armings of %#x from CPU %d kind %d: %d, want %d", k[0], k[1], k[2], got[k], n)
		}
	}
}

// Expiries on a watched CPU are timed entry to exit by timer, a hard
// hrtimer nested in a soft one's callback included; keyed by function,
// kind and base CPU; the tick's own hrtimer counts apart; CPU 0, an exit
// with no entry and an entry whose exit was missed count nothing.
func TestTwinTimerExpiry(t *testing.T) {
	tw := newTimerTwin(t)
	p := tw.objs
	tw.run(p.TestTimerEntry, 1, 0xb0, 0x5f, 1, 1, 100) // soft hrtimer B
	tw.run(p.TestTimerEntry, 1, 0xa0, 0x4f, 0, 1, 150) // hard hrtimer A inside it
	tw.run(p.TestTimerExit, 1, 0xa0, 0, 170)
	tw.run(p.TestTimerExit, 1, 0xb0, 0, 300)
	tw.run(p.TestTimerEntry, 1, 0xc0, 0x6f, 2, 0, 1000) // CPU 0's wheel timer, migrated
	tw.run(p.TestTimerExit, 1, 0xc0, 1, 1500)
	tw.run(p.TestTimerEntry, 1, 0xd0, tickFn, 0, 1, 2000)
	tw.run(p.TestTimerExit, 1, 0xd0, 0, 2030)
	tw.run(p.TestTimerEntry, 0, 0xe0, 0x7f, 0, 0, 100) // CPU 0: not watched
	tw.run(p.TestTimerExit, 0, 0xe0, 0, 900)
	tw.run(p.TestTimerExit, 1, 0xf0, 0, 900)            // no entry
	tw.run(p.TestTimerEntry, 1, 0x90, 0x8f, 2, 1, 3000) // its exit missed...
	tw.run(p.TestTimerEntry, 1, 0x91, 0x6f, 2, 0, 4000) // ...the next entry takes the slot
	tw.run(p.TestTimerExit, 1, 0x91, 1, 4100)
	tw.run(p.TestTimerExit, 1, 0x90, 1, 9000) // stale: not timed
	for _, c := range []struct {
		fn         uint64
		kind, base uint16
		want       isoIsoTime
	}{
		{0x4f, 0, 1, isoIsoTime{Count: 1, Ns: 20, MaxNs: 20}},
		{0x5f, 1, 1, isoIsoTime{Count: 1, Ns: 200, MaxNs: 200}},
		{0x6f, 2, 0, isoIsoTime{Count: 2, Ns: 600, MaxNs: 500}},
	} {
		k := isoIsoTimerKey{Fn: c.fn, Cpu: 1, Kind: c.kind, FromCpu: uint32(c.base)}
		if got := timeOf(t, p.IsoTimerExps, k); got != c.want {
			t.Errorf("timer %#x: %+v, want %+v", c.fn, got, c.want)
		}
	}
	var k isoIsoTimerKey
	var per []isoIsoTime
	n, it := 0, p.IsoTimerExps.Iterate()
	for it.Next(&k, &per) {
		n++
	}
	if n != 3 {
		t.Errorf("%d expiry entries, want 3 (not the tick's, CPU 0's, an exit with no entry or a stale entry)", n)
	}
	var tick uint64
	var states []isoIsoCpu
	if err := p.IsoCpusState.Lookup(uint32(0), &states); err != nil {
		t.Fatal(err)
	}
	for _, c := range states {
		tick += c.Tick.Ns
	}
	if tick != 30 {
		t.Errorf("tick hrtimer %d ns, want 30", tick)
	}
}
