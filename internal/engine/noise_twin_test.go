package engine

// BPF logic tests of the noise metric (noise.bpf.h): synthetic switches,
// IRQs, softirqs and ticks on CPU 0 through the twins, asserting each
// interval's length and causes exactly.

import (
	"testing"

	"github.com/rtscope/rtscope/internal/metric"
)

// noiseTwin drives the noise twins on CPU 0, whose flight slots it reads.
type noiseTwin struct {
	t    *testing.T
	objs *twinObjects
}

const noiseSlots = 256

func newNoiseTwin(t *testing.T, tids ...uint32) *noiseTwin {
	nt := &noiseTwin{t: t, objs: twinFlight(t, noiseSlots, nil)}
	for _, tid := range tids {
		if ret := onCPU0(t, nt.objs.TestTrack, uint64(tid), uint64(tid), 0, 0); ret != 0 {
			t.Fatalf("track %d: %d", tid, int32(ret))
		}
	}
	return nt
}

// switchTo: prev (kernel prio pp) leaves the CPU for next (np) at now;
// runnable: prev stays runnable (preempted).
func (nt *noiseTwin) switchTo(now uint64, prev, next uint32, runnable bool, pp, np int64, steal uint64) {
	state := uint64(1)
	if runnable {
		state = 0
	}
	onCPU0(nt.t, nt.objs.TestNoiseSwitch, now, uint64(prev), uint64(next), b2u(runnable), state,
		uint64(pp), uint64(np), steal)
}

// part: an interruption of cause c (who) on CPU 0 from entry to exit;
// steal: the steal clock read at its exit (0: none).
func (nt *noiseTwin) part(entry, exit uint64, c uint8, who uint32, steal uint64) {
	onCPU0(nt.t, nt.objs.TestNoiseIrq, entry, 0, 0, 0, 0, 0, 0)
	onCPU0(nt.t, nt.objs.TestNoiseIrq, exit, 1, 0, uint64(c), uint64(who), entry, steal)
}

func (nt *noiseTwin) noise(tid uint32) MetricStats {
	nt.t.Helper()
	return nt.stats(tid).M[metric.Noise]
}

// stats reads tid's statistics as user space sees them.
func (nt *noiseTwin) stats(tid uint32) *TaskStats {
	nt.t.Helper()
	id := uint64(onCPU0(nt.t, nt.objs.TestId, uint64(tid)))
	var k bpfRtsTaskStats
	if err := nt.objs.Stats.Lookup(id, &k); err != nil {
		nt.t.Fatalf("stats of %d: %v", tid, err)
	}
	s, _ := histCarries{}.join(&k)
	return s
}

func (nt *noiseTwin) events() []Event { return flightEvents(nt.t, nt.objs, noiseSlots, EventNoise) }

func checkNoise(t *testing.T, e Event, tid uint32, start, end uint64, mask uint16, top uint8, who uint32) {
	t.Helper()
	if e.A != tid || EventX(&e) != start || EventY(&e) != end || NoiseMask(&e) != mask || NoiseTop(&e) != top || e.B != who {
		t.Errorf("noise event: tid %d [%d, %d] causes %#x top %d who %d; want tid %d [%d, %d] causes %#x top %d who %d",
			e.A, EventX(&e), EventY(&e), NoiseMask(&e), NoiseTop(&e), e.B, tid, start, end, mask, top, who)
	}
}

func bit(c uint8) uint16 { return 1 << c }

// An IRQ, the softirq at its exit and a preemption at its return, each
// within the merge gap of the last, are one interval, recorded when the
// next IRQ comes later than the gap; its largest part (the preemption)
// names who. A sleep records the interval it ends.
func TestTwinNoiseMerge(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	nt.switchTo(1_000, 0, 100, false, 120, 50, 0)
	nt.part(10_000, 13_000, NoiseIRQ, 5, 0)
	nt.part(13_500, 20_000, NoiseSoftirq, 1, 0) // 500 ns after the IRQ: merged
	nt.switchTo(20_500, 100, 200, true, 50, 40, 0)
	nt.switchTo(50_000, 200, 100, false, 40, 50, 0)
	if m := nt.noise(100); m.Count != 0 {
		t.Fatalf("recorded before it could no longer grow: %d samples", m.Count)
	}
	nt.part(100_000, 101_000, NoiseIRQ, 7, 0) // 50 us later: the first one is over
	nt.switchTo(200_000, 100, 0, false, 50, 120, 0)
	m := nt.noise(100)
	if m.Count != 2 || m.Max != 40_000 || m.Min != 1_000 || m.MaxStart != 10_000 || m.MaxEnd != 50_000 {
		t.Errorf("noise: %d samples, min %d, max %d [%d, %d]; want 2, 1000, 40000 [10000, 50000]",
			m.Count, m.Min, m.Max, m.MaxStart, m.MaxEnd)
	}
	evs := nt.events()
	if len(evs) != 2 {
		t.Fatalf("%d noise events, want 2", len(evs))
	}
	checkNoise(t, evs[0], 100, 10_000, 50_000, bit(NoiseIRQ)|bit(NoiseSoftirq)|bit(NoisePreempt), NoisePreempt, 200)
	checkNoise(t, evs[1], 100, 100_000, 101_000, bit(NoiseIRQ), NoiseIRQ, 7)
}

// A real-time task left runnable for a fair task (or idle) was throttled;
// an untracked task's interruptions count for nobody.
func TestTwinNoiseThrottle(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	nt.switchTo(1_000, 0, 100, false, 120, 10, 0)
	nt.switchTo(1_000_000, 100, 300, true, 10, 120, 0) // RT runtime used up: a fair task runs
	nt.switchTo(51_000_000, 300, 100, false, 120, 10, 0)
	nt.switchTo(51_100_000, 100, 300, false, 10, 120, 0) // sleeps
	nt.part(52_000_000, 52_010_000, NoiseIRQ, 9, 0)      // 300 is not tracked
	nt.switchTo(53_000_000, 300, 0, false, 120, 120, 0)
	m := nt.noise(100)
	if m.Count != 1 || m.Max != 50_000_000 {
		t.Errorf("noise: %d samples, max %d; want 1 of 50 ms", m.Count, m.Max)
	}
	evs := nt.events()
	if len(evs) != 1 {
		t.Fatalf("%d noise events, want 1", len(evs))
	}
	checkNoise(t, evs[0], 100, 1_000_000, 51_000_000, bit(NoiseThrottle), NoiseThrottle, 300)
}

// A real-time task left for a fair task (throttled) and then held off by
// a real-time task of higher priority that got the CPU back first: its
// time off the CPU is split by what the CPU ran, throttling while the fair
// task ran, preemption by the one that took the CPU back after; the
// largest names the interval.
func TestTwinNoiseThrottleThenPeer(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	nt.switchTo(1_000, 0, 100, false, 120, 10, 0)
	nt.switchTo(1_000_000, 100, 300, true, 10, 120, 0)   // throttled: a fair task runs 20 ms
	nt.switchTo(21_000_000, 300, 400, false, 120, 5, 0)  // a FIFO task of higher priority gets the CPU back
	nt.switchTo(81_000_000, 400, 300, false, 5, 120, 0)  // sleeps; the fair task again, 9 ms
	nt.switchTo(90_000_000, 300, 100, false, 120, 10, 0) // back: 89 ms off its CPU
	nt.switchTo(90_100_000, 100, 0, false, 10, 120, 0)   // sleeps
	ns, parts := nt.byCause(100)
	if got := [2]uint64{ns[NoiseThrottle-1], ns[NoisePreempt-1]}; got != [2]uint64{29_000_000, 60_000_000} {
		t.Errorf("throttling %d ns, preemption %d ns; want 29 ms, 60 ms", got[0], got[1])
	}
	if parts[NoiseThrottle-1] != 1 || parts[NoisePreempt-1] != 1 {
		t.Errorf("%d throttling, %d preemption parts; want 1 and 1", parts[NoiseThrottle-1], parts[NoisePreempt-1])
	}
	evs := nt.events()
	if len(evs) != 1 {
		t.Fatalf("%d noise events, want 1", len(evs))
	}
	checkNoise(t, evs[0], 100, 1_000_000, 90_000_000, bit(NoiseThrottle)|bit(NoisePreempt), NoisePreempt, 400)
}

// Steal the tick finds while the task ran is a part before the interrupt
// that saw it, never before the task's switch-in; unchanged steal adds none.
func TestTwinNoiseSteal(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	nt.switchTo(100_000, 0, 100, false, 120, 50, 7_000)
	nt.part(1_000_000, 1_002_000, NoiseTimer, 0, 507_000) // 500 us stolen before it
	nt.part(2_000_000, 2_001_000, NoiseTimer, 0, 507_000) // none since
	nt.part(3_000_000, 3_001_000, NoiseTimer, 0, 5_507_000)
	nt.switchTo(4_000_000, 100, 0, false, 50, 120, 5_507_000)
	evs := nt.events()
	if len(evs) != 3 {
		t.Fatalf("%d noise events, want 3", len(evs))
	}
	checkNoise(t, evs[0], 100, 500_000, 1_002_000, bit(NoiseTimer)|bit(NoiseSteal), NoiseSteal, 0)
	checkNoise(t, evs[1], 100, 2_000_000, 2_001_000, bit(NoiseTimer), NoiseTimer, 0)
	// 5 ms of steal but only 1 ms since the last interval ended: clamped there.
	checkNoise(t, evs[2], 100, 2_001_000, 3_001_000, bit(NoiseTimer)|bit(NoiseSteal), NoiseSteal, 0)
}

// Nested interruptions (an IRQ inside a softirq) are one part each and
// one interval; a depth left by a lost exit is dropped at the next entry
// that finds the CPU idle of interrupts, and at the task's end its
// pending interval is recorded.
func TestTwinNoiseNestingAndEnd(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	nt.switchTo(1_000, 0, 100, false, 120, 50, 0)
	onCPU0(t, nt.objs.TestNoiseIrq, 10_000, 0, 0, 0, 0, 0, 0) // softirq
	onCPU0(t, nt.objs.TestNoiseIrq, 12_000, 0, 1, 0, 0, 0, 0) // IRQ inside it
	onCPU0(t, nt.objs.TestNoiseIrq, 14_000, 1, 0, uint64(NoiseIRQ), 3, 12_000, 0)
	onCPU0(t, nt.objs.TestNoiseIrq, 30_000, 1, 0, uint64(NoiseSoftirq), 2, 10_000, 0)
	onCPU0(t, nt.objs.TestNoiseIrq, 100_000, 0, 0, 0, 0, 0, 0) // its exit is lost
	onCPU0(t, nt.objs.TestNoiseIrq, 200_000, 0, 0, 0, 0, 0, 0) // not busy: depth reset
	onCPU0(t, nt.objs.TestNoiseIrq, 201_000, 1, 0, uint64(NoiseIRQ), 4, 200_000, 0)
	if ret := onCPU0(t, nt.objs.TestNoiseEnd, 300_000, 100); ret != 0 {
		t.Fatalf("end: %d", int32(ret))
	}
	evs := nt.events()
	// The interruption whose exit was lost never ended: no interval.
	if len(evs) != 2 {
		t.Fatalf("%d noise events, want 2", len(evs))
	}
	checkNoise(t, evs[0], 100, 10_000, 30_000, bit(NoiseIRQ)|bit(NoiseSoftirq), NoiseSoftirq, 2)
	checkNoise(t, evs[1], 100, 200_000, 201_000, bit(NoiseIRQ), NoiseIRQ, 4)
}

// A timer interrupt that came after its timer's hard expiry took the CPU
// from that expiry (its delivery and entry show no event); an expiry
// before the task's switch-in or the end of its last part is not taken.
func TestTwinNoiseLateTimer(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	nt.switchTo(500_000, 0, 100, false, 120, 50, 0)
	lateTimer := func(due, entry, exit uint64) {
		onCPU0(t, nt.objs.TestNoiseIrq, entry, 0, 0, 0, 0, due, 0)
		onCPU0(t, nt.objs.TestNoiseIrq, exit, 1, 0, uint64(NoiseTimer), 0, entry, 0)
	}
	lateTimer(1_000_000, 1_040_000, 1_045_000) // 40 us late
	lateTimer(400_000, 2_000_000, 2_001_000)   // due before its switch-in: from its entry
	lateTimer(3_000_000, 3_000_000, 3_002_000) // on time
	nt.switchTo(4_000_000, 100, 0, false, 50, 120, 0)
	evs := nt.events()
	if len(evs) != 3 {
		t.Fatalf("%d noise events, want 3", len(evs))
	}
	checkNoise(t, evs[0], 100, 1_000_000, 1_045_000, bit(NoiseTimer), NoiseTimer, 0)
	checkNoise(t, evs[1], 100, 2_000_000, 2_001_000, bit(NoiseTimer), NoiseTimer, 0)
	checkNoise(t, evs[2], 100, 3_000_000, 3_002_000, bit(NoiseTimer), NoiseTimer, 0)
}

// The softirqs and the preemption that a hard IRQ's exit runs are that
// interruption's, however long the interrupt's unseen tail (up to
// RTS_NOISE_TAIL_NS); a softirq after a softirq is not a tail.
func TestTwinNoiseIRQTail(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	softirq := func(entry, exit uint64, vec uint32) {
		onCPU0(t, nt.objs.TestNoiseIrq, entry, 0, 2, 0, 0, 0, 0)
		onCPU0(t, nt.objs.TestNoiseIrq, exit, 1, 0, uint64(NoiseSoftirq), uint64(vec), entry, 0)
	}
	nt.switchTo(100_000, 0, 100, false, 120, 50, 0)
	nt.part(1_000_000, 1_005_000, NoiseTimer, 0, 0)
	softirq(1_040_000, 1_050_000, 1) // 35 us after the timer interrupt: its exit
	softirq(1_100_000, 1_110_000, 9) // 50 us after a softirq: another interruption
	nt.part(2_000_000, 2_010_000, NoiseIRQ, 11, 0)
	nt.switchTo(2_070_000, 100, 200, true, 50, 40, 0) // preempted at that IRQ's return
	nt.switchTo(2_170_000, 200, 100, false, 40, 50, 0)
	nt.switchTo(3_000_000, 100, 0, false, 50, 120, 0)
	evs := nt.events()
	if len(evs) != 3 {
		t.Fatalf("%d noise events, want 3", len(evs))
	}
	checkNoise(t, evs[0], 100, 1_000_000, 1_050_000, bit(NoiseTimer)|bit(NoiseSoftirq), NoiseSoftirq, 1)
	checkNoise(t, evs[1], 100, 1_100_000, 1_110_000, bit(NoiseSoftirq), NoiseSoftirq, 9)
	checkNoise(t, evs[2], 100, 2_000_000, 2_170_000, bit(NoiseIRQ)|bit(NoisePreempt), NoisePreempt, 200)
}

// The local timer interrupt (feature local_timer) is one part from its
// entry to its exit, the tail after its last callback included; the hard
// callback nested in it moves the start back to the callback's due time,
// never before what is known of the CPU (the switch-in, the last interval's end).
func TestTwinNoiseLocalTimer(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	nt.switchTo(1_000, 0, 100, false, 120, 10, 0)
	irq := func(now, leave, busy, since uint64) {
		onCPU0(t, nt.objs.TestNoiseIrq, now, leave, busy, uint64(NoiseTimer), 0, since, 0)
	}
	irq(500_000, 0, 0, 0)       // local_timer_entry
	irq(530_000, 0, 1, 480_000) // hrtimer_expire_entry, nested, due at 480 us
	irq(540_000, 1, 0, 530_000) // hrtimer_expire_exit
	irq(600_000, 1, 0, 500_000) // local_timer_exit: the clock event reprogrammed
	irq(900_000, 0, 0, 0)       // the next tick
	irq(910_000, 0, 1, 500)     // due before the last interval ended: not taken
	irq(911_000, 1, 0, 910_000)
	irq(950_000, 1, 0, 900_000)
	nt.switchTo(1_000_000, 100, 0, false, 10, 120, 0) // sleeps
	evs := nt.events()
	if len(evs) != 2 {
		t.Fatalf("%d noise events, want 2", len(evs))
	}
	checkNoise(t, evs[0], 100, 480_000, 600_000, bit(NoiseTimer), NoiseTimer, 0)
	checkNoise(t, evs[1], 100, 900_000, 950_000, bit(NoiseTimer), NoiseTimer, 0)
}

// byCause reads tid's noise totals by cause (index cause - 1).
func (nt *noiseTwin) byCause(tid uint32) (ns [NoiseCauseCount - 1]uint64, parts [NoiseCauseCount - 1]uint32) {
	nt.t.Helper()
	s := nt.stats(tid)
	return s.NoiseNs, s.NoiseParts
}

// A task's noise totals by cause: each part counted once with its own
// time, a part nested in another taken out of the other's time; the local
// timer interrupt and the callbacks it runs are one timer part, and so is
// a device IRQ that runs hard timer callbacks (arm64's arch_timer); a
// preemption and a throttled interval are counted at the switch-in that
// ends them, steal where the tick reads it; an untracked task's
// interruptions count for nobody.
func TestTwinNoiseByCause(t *testing.T) {
	nt := newNoiseTwin(t, 100)
	irq := func(now, leave, busy uint64, c uint8, who uint32, since, steal uint64) {
		onCPU0(t, nt.objs.TestNoiseIrq, now, leave, busy, uint64(c), uint64(who), since, steal)
	}
	nt.switchTo(1_000, 0, 100, false, 120, 50, 0)
	nt.part(10_000, 13_000, NoiseIRQ, 5, 0)        // IRQ 3 us
	nt.part(13_500, 20_000, NoiseSoftirq, 1, 0)    // softirq 6.5 us
	nt.switchTo(20_500, 100, 200, true, 50, 40, 0) // preempted 29.5 us
	nt.switchTo(50_000, 200, 100, false, 40, 50, 7_000)
	irq(100_000, 0, 0, 0, 0, 0, 0)                        // local_timer_entry
	irq(110_000, 0, 1, 0, 0, 0, 0)                        // its callback
	irq(115_000, 1, 0, NoiseTimer, 0, 110_000, 0)         // 5 us
	irq(130_000, 1, 0, NoiseTimer, 0, 100_000, 0)         // local_timer_exit: 30 us in all
	irq(200_000, 0, 0, 0, 0, 0, 0)                        // softirq
	irq(205_000, 0, 1, 0, 0, 0, 0)                        // IRQ inside it
	irq(207_000, 1, 0, NoiseIRQ, 9, 205_000, 0)           // 2 us
	irq(220_000, 1, 0, NoiseSoftirq, 3, 200_000, 0)       // 20 us, 18 of its own
	nt.part(300_000, 301_000, NoiseTimer, 0, 17_000)      // 1 us, 10 us stolen before it
	nt.switchTo(450_000, 100, 300, true, 50, 120, 17_000) // throttled 50 us, past the timer's tail
	nt.part(470_000, 475_000, NoiseIRQ, 9, 0)             // 300 is not tracked
	nt.switchTo(500_000, 300, 100, false, 120, 50, 17_000)
	irq(600_000, 0, 0, 0, 0, 0, 0)                         // arm64's timer IRQ
	irq(601_000, 0, 1, 0, 0, 0, 0)                         // its callback
	irq(603_000, 1, 0, NoiseTimer, 0, 601_000, 0)          // 2 us
	irq(605_000, 1, 0, NoiseIRQ, 11, 600_000, 0)           // 5 us in all: the timer's
	nt.switchTo(1_000_000, 100, 0, false, 50, 120, 17_000) // sleeps
	if evs := nt.events(); len(evs) != 6 {
		for _, e := range evs {
			t.Logf("[%d, %d] causes %#x", EventX(&e), EventY(&e), NoiseMask(&e))
		}
		t.Fatalf("%d noise events, want 6", len(evs))
	}
	ns, parts := nt.byCause(100)
	want := map[uint8]struct {
		parts uint32
		ns    uint64
	}{
		NoiseIRQ: {2, 5_000}, NoiseTimer: {3, 36_000}, NoiseSoftirq: {2, 24_500},
		NoisePreempt: {1, 29_500}, NoiseThrottle: {1, 50_000}, NoiseSteal: {1, 10_000},
	}
	for c := uint8(1); c < uint8(NoiseCauseCount); c++ {
		w := want[c]
		if parts[c-1] != w.parts || ns[c-1] != w.ns {
			t.Errorf("cause %d: %d parts, %d ns; want %d, %d", c, parts[c-1], ns[c-1], w.parts, w.ns)
		}
	}
	if m := nt.noise(100); m.Count != 6 {
		t.Errorf("noise: %d samples, want 6", m.Count)
	}
}
